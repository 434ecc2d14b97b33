// obl's driver for obliviouslabs/oram, against its public headers (odsl/).
//   olabs_bench <TYPE> N=.. Key_bytes=.. Value_bytes=.. [queries=Q] [reps=R]
//               [method=fixed|public] [Shards=S] [Batch_size=B] [seed=S]
// One REPORT line per repetition on stdout (benchmark/common/peer_report.h).
// method=fixed (default) fixes the public driver's artifacts: addresses and
// keys uniformly random and drawn before timing, the structure filled with N
// entries before the timed reads, get latency over hits only (misses timed on
// their own). method=public repeats the public driver's method (address 0 on
// every read, no fill, hits and misses averaged) under the name
// olabs_oram_pubmethod, so the two can be told apart in a table.
#include <stdarg.h>
#include <stdint.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "odsl/omap.hpp"
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
