// obl's driver for obliviouslabs/oram, against its public headers (odsl/).
//   olabs_bench <TYPE> N=.. Key_bytes=.. Value_bytes=.. [queries=Q] [reps=R]
//               [method=fixed|public] [Shards=S] [Batch_size=B] [seed=S]
//   olabs_bench LOADBALANCE B=.. Key_bytes=.. Value_bytes=.. Shards=S Threads=T
//               [queries=Q] [reps=R] [method=fixed|public]
// One REPORT line per repetition on stdout (benchmark/common/peer_report.h).
// method=fixed (default) fixes the public driver's artifacts: addresses and
// keys uniformly random and drawn before timing, the structure filled with N
// entries before the timed reads, get latency over hits only (misses timed on
// their own). method=public repeats the public driver's method (address 0 on
// every read, no fill, hits and misses averaged) under the name
// olabs_oram_pubmethod, so the two can be told apart in a table.
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "odsl/omap.hpp"
#include "algorithm/bitonic.hpp"
#include "algorithm/or_compact_shuffle.hpp"
#include "algorithm/param_select.hpp"
#include "odsl/par_omap.hpp"
#include "odsl/recursive_oram.hpp"
#include "odsl/circuit_oram.hpp"
#include "external_memory/virtualvector.hpp"

#include "../common/peer_report.h"

namespace {

struct Args {
  std::map<std::string, std::string> kv;
  uint64_t num(const char* k, uint64_t dflt) const {
    auto it = kv.find(k);
    return it == kv.end() ? dflt : strtoull(it->second.c_str(), nullptr, 10);
  }
  std::string str(const char* k, const char* dflt) const {
    auto it = kv.find(k);
    return it == kv.end() ? dflt : it->second;
  }
};

template <size_t S>
struct Val {
  using type = Bytes<S>;
  static type make(uint64_t x) {
    type v;
    memset(v.data, 0, S);
    memcpy(v.data, &x, S < 8 ? S : 8);
    return v;
  }
  static uint64_t get(const type& v) {
    uint64_t x = 0;
    memcpy(&x, v.data, S < 8 ? S : 8);
    return x;
  }
};
template <>
struct Val<8> {
  using type = uint64_t;
  static type make(uint64_t x) { return x; }
  static uint64_t get(type v) { return v; }
};
template <>
struct Val<4> {
  using type = uint32_t;
  static type make(uint64_t x) { return (uint32_t)x; }
  static uint64_t get(type v) { return v; }
};

const char* g_impl = "olabs_oram";
bool g_public = false;

void report(const char* type, const char* impl, const std::string& fields) {
  printf("REPORT_123%s|%s|peer| %s REPORT_123\n", type, impl, fields.c_str());
  fflush(stdout);
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::vector<uint64_t> draw(uint64_t q, uint64_t n, uint64_t* seed) {
  std::vector<uint64_t> a(q);
  for (auto& x : a) x = peer_below(seed, n);
  return a;
}

// NRORAM: the caller keeps the positions (a plain table), as in obl-bench.
template <size_t K, size_t V>
void nroram(uint64_t n, uint64_t q, uint64_t* seed) {
  using KT = typename Val<K>::type;
  using VT = typename Val<V>::type;
  using Oram = ODSL::CircuitORAM::ORAM<VT, 2, 20, uint32_t, KT, 4096, false>;
  std::vector<uint64_t> addr = draw(q, n, seed);  // before timing and before rss0
  long rss0 = peer_rss_kb();
  uint64_t t0 = peer_now_ns();
  Oram oram(n);
  uint64_t t1 = peer_now_ns();
  std::vector<uint32_t> pos(n);
  if (!g_public)
    for (uint64_t i = 0; i < n; i++)
      pos[i] = oram.Write((KT)i, Val<V>::make(i * 7 + 1));
  uint64_t t2 = peer_now_ns();
  uint64_t bad = 0, t3 = peer_now_ns();
  for (uint64_t i = 0; i < q; i++) {
    VT out{};
    if (g_public) {
      oram.Read(0, 0, out);
    } else {
      uint64_t a = addr[i];
      pos[a] = oram.Read(pos[a], (KT)a, out);
      bad += Val<V>::get(out) != Val<V>::make(a * 7 + 1);
    }
  }
  uint64_t t4 = peer_now_ns();
  long rss1 = peer_rss_kb();
  if (bad) throw std::runtime_error("NRORAM read a wrong value");
  double lat = (t4 - t3) / 1e3 / q;
  report("NRORAM", g_impl,
         fmt("N:=%zu | Key_bytes := %zu | Value_bytes := %zu | "
             "Initialization_zeroed_time_us := %.2f | Initialization_time_us := %.2f | "
             "Read_latency_us := %.4f | Read_throughput_qps := %.2f | Queries := %zu | "
             "Memory_kb := %ld",
             (size_t)n, K, V, (t1 - t0) / 1e3, g_public ? 0.0 : (t2 - t0) / 1e3, lat,
             1e6 / lat, (size_t)q, rss1 - rss0));
}

// RORAM: the zero build (construction + InitDefault, what the harness calls
// Initialization_zeroed_time_us) is timed and freed first; the timed reads
// then run on a structure filled from N values (Initialization_time_us).
template <size_t V>
void roram(uint64_t n, uint64_t q, uint64_t* seed) {
  using VT = typename Val<V>::type;
  using Ram = ODSL::RecursiveORAM<VT>;
  std::vector<uint64_t> addr = draw(q, n, seed);  // before timing and before rss0
  long rss0 = peer_rss_kb();
  uint64_t t0 = peer_now_ns();
  Ram* zero = new Ram(n);
  if (!g_public) zero->InitDefault(Val<V>::make(0));
  uint64_t t1 = peer_now_ns();
  if (!g_public) {
    delete zero;
    rss0 = peer_rss_kb();
  }
  uint64_t f0 = peer_now_ns();
  Ram* o = zero;
  if (!g_public) {
    o = new Ram(n);
    EM::VirtualVector::VirtualReader<VT> rd(
        n, [](uint64_t i) { return Val<V>::make(i * 7 + 1); });
    o->InitFromReader(rd);
  }
  double fill_us = g_public ? 0.0 : (peer_now_ns() - f0) / 1e3;
  uint64_t bad = 0, t3 = peer_now_ns();
  for (uint64_t i = 0; i < q; i++) {
    VT out{};
    if (g_public) {
      o->Read(0, out);
    } else {
      o->Read(addr[i], out);
      bad += Val<V>::get(out) != Val<V>::get(Val<V>::make(addr[i] * 7 + 1));
    }
  }
  uint64_t t4 = peer_now_ns();
  long rss1 = peer_rss_kb();
  delete o;
  if (bad) throw std::runtime_error("RORAM read a wrong value");
  double lat = (t4 - t3) / 1e3 / q;
  report("RORAM", g_impl,
         fmt("N:=%zu | Key_bytes := 8 | Value_bytes := %zu | "
             "Initialization_zeroed_time_us := %.2f | Initialization_time_us := %.2f | "
             "Read_latency_us := %.4f | Read_throughput_qps := %.2f | Queries := %zu | "
             "Memory_kb := %ld",
             (size_t)n, V, (t1 - t0) / 1e3, fill_us, lat, 1e6 / lat, (size_t)q,
             rss1 - rss0));
}

// Distinct keys: a bijection of i (odd multiplier mod 2^64), so hits and misses
// are known without a set, and keys are spread, not sequential.
uint64_t key_of(uint64_t i) { return i * 0x9e3779b97f4a7c15ull + 0x1234567ull; }

template <size_t K, size_t V>
void umap(uint64_t n, uint64_t q, uint64_t* seed) {
  using KT = typename Val<K>::type;
  using VT = typename Val<V>::type;
  uint64_t cap = n * 5 / 4;  // fill 0.8, as the harness runs the map
  uint64_t hits = g_public ? q * 4 / 5 : q, misses = g_public ? q - hits : q / 4;
  std::vector<uint64_t> hk(hits), mk(misses);  // drawn before timing and before rss0
  for (uint64_t i = 0; i < hits; i++)
    hk[i] = g_public ? i % n : peer_below(seed, n);
  for (uint64_t i = 0; i < misses; i++)
    mk[i] = g_public ? n + i % (cap - n) : n + peer_below(seed, 1ull << 40);
  long rss0 = peer_rss_kb();
  uint64_t t0 = peer_now_ns();
  ODSL::OMap<KT, VT, uint32_t> map(cap);
  auto* init = map.NewInitContext(20ULL << 30);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t k = g_public ? i : key_of(i);
    init->Insert(Val<K>::make(k), Val<V>::make(g_public ? (i & 0xff) : i));
  }
  init->Finalize();
  delete init;
  uint64_t t1 = peer_now_ns();
  uint64_t bad = 0, t2 = peer_now_ns();
  for (uint64_t i = 0; i < hits; i++) {
    VT out{};
    bool f = map.Find(Val<K>::make(g_public ? hk[i] : key_of(hk[i])), out);
    bad += !f || (!g_public && Val<V>::get(out) != Val<V>::get(Val<V>::make(hk[i])));
  }
  uint64_t t3 = peer_now_ns();
  for (uint64_t i = 0; i < misses; i++) {
    VT out{};
    bad += map.Find(Val<K>::make(g_public ? mk[i] : key_of(mk[i])), out);
  }
  uint64_t t4 = peer_now_ns();
  long rss1 = peer_rss_kb();
  if (bad) throw std::runtime_error("UnorderedMap returned a wrong answer");
  double hit = (t3 - t2) / 1e3 / hits, miss = (t4 - t3) / 1e3 / misses;
  double get = g_public ? (t4 - t2) / 1e3 / (hits + misses) : hit;
  report("UnorderedMap", g_impl,
         fmt("N:=%zu | Key_bytes := %zu | Value_bytes := %zu | fill:=0.8 | "
             "Initialization_time_us := %.2f | Get_latency_us := %.4f | "
             "Get_throughput_qps := %.2f | Get_miss_latency_us := %.4f | Queries := %zu | "
             "Memory_kb := %ld",
             (size_t)n, K, V, (t1 - t0) / 1e3, get, 1e6 / get, miss, (size_t)hits,
             rss1 - rss0));
}

// Sharded map: batches of B keys, 80 % hits as the harness; keys random and
// drawn before timing; latency per batch, throughput per query.
template <size_t K, size_t V>
void sharded(uint64_t n, uint64_t shards, uint64_t b, uint64_t batches, uint64_t* seed) {
  using KT = typename Val<K>::type;
  using VT = typename Val<V>::type;
  uint64_t cap = n * 5 / 4;
  std::vector<std::vector<KT>> qs(batches, std::vector<KT>(b));  // before timing and rss0
  for (auto& batch : qs)
    for (auto& k : batch) {
      bool hit = peer_below(seed, 5) < 4;
      k = Val<K>::make(key_of(hit ? peer_below(seed, n) : n + peer_below(seed, 1ull << 40)));
    }
  long rss0 = peer_rss_kb();
  uint64_t t0 = peer_now_ns();
  ODSL::ParOMap<KT, VT, uint32_t> map(cap, shards);
  auto* init = map.NewInitContext(n, 20ULL << 30);
  for (uint64_t i = 0; i < n; i++) init->Insert(Val<K>::make(key_of(i)), Val<V>::make(i));
  init->Finalize();
  delete init;
  uint64_t t1 = peer_now_ns();
  std::vector<VT> res(b);
  uint64_t burst = 0, wb = 0;
  for (auto& batch : qs) {
    uint64_t a = peer_now_ns();
    map.FindBatchDeferWriteBack(batch.begin(), batch.end(), res.begin());
    uint64_t m = peer_now_ns();
    map.WriteBack();
    uint64_t e = peer_now_ns();
    burst += m - a;
    wb += e - m;
  }
  long rss1 = peer_rss_kb();
  double per_batch = (burst + wb) / 1e3 / batches;
  report("UnorderedMap", "olabs_oram_sharded",
         fmt("N:=%zu | Key_bytes := %zu | Value_bytes := %zu | Shards := %zu | "
             "Batch_size := %zu | fill:=0.8 | Initialization_time_us := %.2f | "
             "Get_latency_us := %.2f | Get_throughput_qps := %.2f | "
             "Get_burst_latency_us := %.2f | Get_burst_throughput_qps := %.2f | "
             "Get_writeback_latency_us := %.2f | Memory_kb := %ld",
             (size_t)n, K, V, (size_t)shards, (size_t)b, (t1 - t0) / 1e3, per_batch,
             b * 1e6 / per_batch, burst / 1e3 / batches, b * 1e9 * batches / burst,
             wb / 1e3 / batches, rss1 - rss0));
}

// LOADBALANCE: olabs' oblivious load balancer, the routing of ParOMap's
// FindBatchDeferWriteBack without its shard queries (the library has no
// public balancer; the public harness's driver composes the same library
// primitives: salted hash, ParBitonicSortSepPayload, OrCompactSeparateMark,
// OrDistributeSeparateMark, obliMove). route() takes a batch of B keys to S
// shard batches of b keys; answer() takes the S * b answers back to request
// order, duplicates included. The buffers are allocated at construction,
// untimed, as obl's balancer allocates at create (ParOMap allocates them in
// every call).
template <size_t K, size_t V>
class OlabsBalancer {
  using KT = typename Val<K>::type;
  using VT = typename Val<V>::type;
  struct KeyInfo {  // ParOMap's sort record: by hash, ties by key
    KT key;
    uint64_t hash;
    uint32_t shard;
    bool operator<(const KeyInfo& o) const {
      return (hash < o.hash) | ((hash == o.hash) & (key < o.key));
    }
  };

 public:
  struct Result {  // OHashMap::ValResult's layout
    VT value;
    bool found;
  };

  OlabsBalancer(uint32_t B, uint32_t S, int threads) : B_(B), S_(S), threads_(threads) {
    read_rand(salt_, sizeof salt_);
    range_ = (UINT64_MAX - 1) / S + 1;
    size_t sb = (size_t)S * per_shard(B, S);
    info_.reserve(B);
    rec_.reserve(B);
    pre1_.reserve(B + 1);
    pre2_.reserve(sb + 1);
    keys_.reserve(sb);
    res_.reserve(sb);
  }

  size_t bytes() const {
    return info_.capacity() * sizeof(KeyInfo) + (rec_.capacity() + pre1_.capacity() +
           pre2_.capacity()) * sizeof(uint32_t) + keys_.capacity() * sizeof(KT) +
           res_.capacity() * sizeof(Result);
  }

  // ParOMap::maxQueryPerShard at its default failure probability 2^-40.
  static uint32_t per_shard(uint64_t B, uint64_t S) {
    auto ok = [&](uint64_t n) { return Algorithm::binomLogSf(n, B, 1.0 / (double)S) < -40; };
    return (uint32_t)Algorithm::lowerBound(divRoundUp(B, S), B, ok);
  }

  uint32_t shard_batch() const { return b_; }
  std::vector<KT>& shard_keys() { return keys_; }
  std::vector<Result>& shard_answers() { return res_; }

  void route(const KT* q) {
    info_.assign(B_, KeyInfo{});
    rec_.resize(B_);
    for (uint32_t i = 0; i < B_; i++) {
      info_[i].key = q[i];
      info_[i].hash = secure_hash_with_salt((uint8_t*)&info_[i].key, sizeof(KT), salt_);
      info_[i].shard = (uint32_t)(info_[i].hash / range_);
      rec_[i] = i;
    }
    Algorithm::ParBitonicSortSepPayload(info_.begin(), info_.end(), rec_.begin(), threads_);
    // unique keys per shard, and the prefix sum that compacts them
    std::vector<uint32_t> load(S_, 0);
    pre1_.assign(B_ + 1, 0);
    for (uint32_t i = 0; i < B_; i++) {
      bool fresh = i == 0 || !(info_[i].key == info_[i - 1].key);  // i is public
      pre1_[i + 1] = pre1_[i] + fresh;
#pragma omp simd
      for (uint32_t j = 0; j < S_; j++) load[j] += (info_[i].shard == j) & fresh;
    }
    b_ = per_shard(B_, S_);
    for (uint32_t l : load) obliMove(l > b_, b_, l);  // overflow: negligible probability
    keys_.assign((size_t)S_ * b_, KT{});
    for (uint32_t i = 0; i < B_; i++) keys_[i] = info_[i].key;
    Algorithm::OrCompactSeparateMark(keys_.begin(), keys_.begin() + B_, pre1_.begin());
    // shard i's keys to offset i * b
    pre2_.assign((size_t)S_ * b_ + 1, 0);
    for (uint32_t i = 0, start = 0; i < S_; start += load[i], i++)
      for (uint32_t j = 0; j < b_; j++) {
        uint32_t rank = j + 1;
        obliMove(rank > load[i], rank, load[i]);
        pre2_[(size_t)i * b_ + j + 1] = start + rank;
      }
    Algorithm::OrDistributeSeparateMark(keys_.begin(), keys_.end(), pre2_.begin());
    res_.assign((size_t)S_ * b_, Result{});
  }

  void answer(VT* out, uint8_t* found) {
    Algorithm::OrCompactSeparateMark(res_.begin(), res_.end(), pre2_.begin());
    Algorithm::OrDistributeSeparateMark(res_.begin(), res_.begin() + B_, pre1_.begin());
    for (uint32_t i = 1; i < B_; i++)
      obliMove(info_[i].key == info_[i - 1].key, res_[i], res_[i - 1]);
    Algorithm::ParBitonicSortSepPayload(rec_.begin(), rec_.end(), res_.begin(), threads_);
    for (uint32_t i = 0; i < B_; i++) {
      out[i] = res_[i].value;
      found[i] = res_[i].found;
    }
  }

 private:
  uint32_t B_, S_, b_ = 0;
  int threads_;
  uint8_t salt_[16];
  uint64_t range_;
  std::vector<KeyInfo> info_;
  std::vector<uint32_t> rec_, pre1_, pre2_;
  std::vector<KT> keys_;
  std::vector<Result> res_;
};

// The model shard engine, untimed (as obl-bench's lb): answers every entry
// in place, value = key ^ a constant, found = the key's low bit.
const uint64_t kLbMask = 0x5a5a5a5a5a5a5a5aull;
template <size_t K, size_t V, class B>
void lb_engine(B& lb) {
  auto& keys = lb.shard_keys();
  auto& res = lb.shard_answers();
  for (size_t i = 0; i < keys.size(); i++) {
    uint64_t k = Val<K>::get(keys[i]);
    res[i].value = Val<V>::make(k ^ kLbMask);
    res[i].found = k & 1;
  }
}

// Batches of B uniformly random keys, up to 8 distinct ones drawn before
// timing and cycled, max(1, Q / B) batches a repetition; latency per batch,
// both directions (the harness's Latency_us), every answer checked. The
// public method: one batch 100 times, the library's thread count (2 S), the
// two directions back to back with no shard answers.
template <size_t K, size_t V>
void loadbalance(uint64_t B, uint64_t S, uint64_t T, uint64_t q, uint64_t* seed) {
  using KT = typename Val<K>::type;
  using VT = typename Val<V>::type;
  uint64_t nb = g_public ? 100 : std::max<uint64_t>(1, q / B);
  uint64_t ngen = g_public ? 1 : std::min<uint64_t>(nb, 8);
  std::vector<KT> batches(ngen * B);
  for (auto& k : batches) {
    k = Val<K>::make(peer_rand(seed));
    for (size_t w = 8; w + 8 <= K; w += 8) {
      uint64_t x = peer_rand(seed);
      memcpy((uint8_t*)&k + w, &x, 8);
    }
  }
  int threads = (int)(g_public ? 2 * S : T);
  std::vector<VT> out(B);
  std::vector<uint8_t> found(B);
  malloc_trim(0);  // the last repetition's pages back, so that this one's count
  long rss0 = peer_rss_kb();
  OlabsBalancer<K, V> lb((uint32_t)B, (uint32_t)S, threads);
  uint64_t tr = 0, ta = 0, bad = 0;
  for (uint64_t k = 0; k < nb; k++) {
    const KT* batch = batches.data() + (k % ngen) * B;
    uint64_t t0 = peer_now_ns();
    lb.route(batch);
    uint64_t t1 = peer_now_ns();
    if (!g_public) lb_engine<K, V>(lb);
    uint64_t t2 = g_public ? t1 : peer_now_ns();
    lb.answer(out.data(), found.data());
    uint64_t t3 = peer_now_ns();
    tr += t1 - t0;
    ta += t3 - t2;
    for (uint64_t i = 0; i < B && !g_public; i++) {
      uint64_t key = Val<K>::get(batch[i]);
      bad += Val<V>::get(out[i]) != Val<V>::get(Val<V>::make(key ^ kLbMask)) ||
             found[i] != (key & 1);
    }
  }
  long rss1 = peer_rss_kb();
  if (bad) throw std::runtime_error("LOADBALANCE routed a wrong answer back");
  double lat = (tr + ta) / 1e3 / nb;
  report("LOADBALANCE", g_impl,
         fmt("B := %zu | Key_bytes := %zu | Value_bytes := %zu | Shards := %zu | "
             "Threads := %zu | Latency_us := %.2f | Throughput_qps := %.2f | "
             "Throughput_per_core_qps := %.2f | Route_latency_us := %.2f | "
             "Answer_latency_us := %.2f | Shard_batch_entries := %u | "
             "Memory_kb := %ld | Allocated_kb := %.2f",
             (size_t)B, K, V, (size_t)S, (size_t)threads, lat, B * 1e6 / lat,
             B * 1e6 / lat / threads, tr / 1e3 / nb, ta / 1e3 / nb, lb.shard_batch(),
             rss1 - rss0, lb.bytes() / 1024.0));
}

[[noreturn]] void unsupported(const std::string& what) {
  fprintf(stderr, "olabs_bench: unsupported case: %s\n", what.c_str());
  exit(2);
}

void run_one(const std::string& type, const Args& a, uint64_t* seed) {
  uint64_t n = a.num("N", 1024), k = a.num("Key_bytes", 8), v = a.num("Value_bytes", 8);
  uint64_t q = a.num("queries", 100000);
  if (type == "NRORAM") {
    if (k == 4 && v == 8) return nroram<4, 8>(n, q, seed);
    if (k == 8 && v == 8) return nroram<8, 8>(n, q, seed);
    if (k == 4 && v == 4) return nroram<4, 4>(n, q, seed);
  } else if (type == "RORAM") {
    if (v == 8) return roram<8>(n, q, seed);
    if (v == 32) return roram<32>(n, q, seed);
    if (v == 56) return roram<56>(n, q, seed);
  } else if (type == "LOADBALANCE") {
    uint64_t B = a.num("B", 1024), S = a.num("Shards", 15), T = a.num("Threads", 1);
    if (B < 1 || B > (1u << 24) || S < 1 || S > 64 || T < 1 || T > 64)
      unsupported("LOADBALANCE needs 1 <= B <= 2^24, 1 <= Shards <= 64, 1 <= Threads <= 64");
    q = a.num("queries", 1 << 20);
    if (k == 8 && v == 8) return loadbalance<8, 8>(B, S, T, q, seed);
    if (k == 8 && v == 56) return loadbalance<8, 56>(B, S, T, q, seed);
    if (k == 32 && v == 32) return loadbalance<32, 32>(B, S, T, q, seed);
  } else if (type == "UnorderedMap" && a.num("Shards", 0)) {
    uint64_t b = a.num("Batch_size", 1024), batches = a.num("batches", 8);
    if (k == 8 && v == 56) return sharded<8, 56>(n, a.num("Shards", 15), b, batches, seed);
    if (k == 8 && v == 8) return sharded<8, 8>(n, a.num("Shards", 15), b, batches, seed);
  } else if (type == "UnorderedMap") {
    if (k == 8 && v == 8) return umap<8, 8>(n, q, seed);
    if (k == 8 && v == 56) return umap<8, 56>(n, q, seed);
    if (k == 32 && v == 32) return umap<32, 32>(n, q, seed);
  }
  unsupported(type + " K=" + std::to_string(k) + " V=" + std::to_string(v));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: olabs_bench TYPE N=.. Key_bytes=.. Value_bytes=.. ...\n");
    return 2;
  }
  Args a;
  for (int i = 2; i < argc; i++) {
    const char* eq = strchr(argv[i], '=');
    if (!eq) unsupported(std::string("argument ") + argv[i]);
    a.kv[std::string(argv[i], eq - argv[i])] = eq + 1;
  }
  g_public = a.str("method", "fixed") == "public";
  if (g_public) g_impl = "olabs_oram_pubmethod";
  uint64_t seed = a.num("seed", 1);
  try {
    for (uint64_t r = 0, reps = a.num("reps", 1); r < reps; r++) run_one(argv[1], a, &seed);
  } catch (const std::exception& e) {
    fprintf(stderr, "olabs_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
