// cpp_stl: the C++ standard library's containers as non-oblivious baselines.
//   cpp_stl_bench RORAM|NRORAM N=.. Value_bytes=.. [queries=Q] [reps=R]
//   cpp_stl_bench UnorderedMap N=.. Key_bytes=.. Value_bytes=.. [fill=0.8] ...
// RORAM/NRORAM: a std::vector of N values, Q reads at uniformly random
// indices drawn before timing. UnorderedMap: a std::unordered_map reserved
// for N / fill entries, N insertions of distinct keys (Initialization), Q
// gets of present keys in random order, drawn before timing. Every read is
// checked. One REPORT line per repetition on stdout.
#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "../common/peer_report.h"

namespace {

template <size_t S>
using Blob = std::array<uint8_t, S>;

template <size_t S>
Blob<S> blob(uint64_t x) {
  Blob<S> b{};
  memcpy(b.data(), &x, S < 8 ? S : 8);
  return b;
}

template <size_t S>
struct BlobHash {
  size_t operator()(const Blob<S>& b) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the key's bytes
    for (uint8_t c : b) h = (h ^ c) * 1099511628211ull;
    return (size_t)h;
  }
};

uint64_t key_of(uint64_t i) { return i * 0x9e3779b97f4a7c15ull + 0x1234567ull; }

void report(const char* type, const std::string& fields) {
  printf("REPORT_123%s|cpp_stl|peer| %s REPORT_123\n", type, fields.c_str());
  fflush(stdout);
}

template <size_t V>
void array(const char* type, uint64_t n, uint64_t k, uint64_t q, uint64_t* seed) {
  long rss0 = peer_rss_kb();
  uint64_t t0 = peer_now_ns();
  std::vector<Blob<V>> a(n);
  uint64_t t1 = peer_now_ns();
  for (uint64_t i = 0; i < n; i++) a[i] = blob<V>(i * 7 + 1);
  uint64_t t2 = peer_now_ns();
  std::vector<uint64_t> idx(q);
  for (auto& x : idx) x = peer_below(seed, n);
  uint64_t acc = 0, t3 = peer_now_ns();
  for (uint64_t i = 0; i < q; i++) acc += a[idx[i]][0] ^ a[idx[i]][V - 1];
  uint64_t t4 = peer_now_ns();
  long rss1 = peer_rss_kb();
  uint64_t want = 0;
  for (uint64_t i = 0; i < q; i++) {
    Blob<V> e = blob<V>(idx[i] * 7 + 1);
    want += e[0] ^ e[V - 1];
  }
  if (acc != want) throw std::runtime_error("read a wrong value");
  double lat = (t4 - t3) / 1e3 / q;
  char buf[512];
  snprintf(buf, sizeof buf,
           "N:=%zu | Key_bytes := %zu | Value_bytes := %zu | "
           "Initialization_zeroed_time_us := %.2f | Initialization_time_us := %.2f | "
           "Read_latency_us := %.5f | Read_throughput_qps := %.2f | Queries := %zu | "
           "Memory_kb := %ld",
           (size_t)n, (size_t)k, V, (t1 - t0) / 1e3, (t2 - t0) / 1e3, lat, 1e6 / lat,
           (size_t)q, rss1 - rss0);
  report(type, buf);
}

template <size_t K, size_t V>
void umap(uint64_t n, double fill, uint64_t q, uint64_t* seed) {
  std::vector<uint64_t> hit(q);
  for (auto& x : hit) x = peer_below(seed, n);
  std::vector<Blob<K>> keys(q);
  for (uint64_t i = 0; i < q; i++) keys[i] = blob<K>(key_of(hit[i]));
  long rss0 = peer_rss_kb();
  uint64_t t0 = peer_now_ns();
  std::unordered_map<Blob<K>, Blob<V>, BlobHash<K>> m;
  m.reserve((size_t)((double)n / fill));
  for (uint64_t i = 0; i < n; i++) m.emplace(blob<K>(key_of(i)), blob<V>(i));
  uint64_t t1 = peer_now_ns();
  uint64_t acc = 0, found = 0, t2 = peer_now_ns();
  for (uint64_t i = 0; i < q; i++) {
    auto it = m.find(keys[i]);
    if (it != m.end()) {
      found++;
      acc += it->second[0];
    }
  }
  uint64_t t3 = peer_now_ns();
  long rss1 = peer_rss_kb();
  uint64_t want = 0;
  for (uint64_t i = 0; i < q; i++) want += blob<V>(hit[i])[0];
  if (found != q || acc != want) throw std::runtime_error("get returned a wrong answer");
  double lat = (t3 - t2) / 1e3 / q;
  char buf[512];
  snprintf(buf, sizeof buf,
           "N:=%zu | Key_bytes := %zu | Value_bytes := %zu | fill:=%g | "
           "Initialization_time_us := %.2f | Get_latency_us := %.5f | "
           "Get_throughput_qps := %.2f | Queries := %zu | Memory_kb := %ld",
           (size_t)n, K, V, fill, (t1 - t0) / 1e3, lat, 1e6 / lat, (size_t)q, rss1 - rss0);
  report("UnorderedMap", buf);
}

void run_one(const std::string& type, std::map<std::string, std::string>& a, uint64_t* seed) {
  auto num = [&](const char* k, uint64_t d) {
    return a.count(k) ? strtoull(a[k].c_str(), nullptr, 10) : d;
  };
  uint64_t n = num("N", 1024), k = num("Key_bytes", 8), v = num("Value_bytes", 8);
  uint64_t q = num("queries", 1000000);
  double fill = a.count("fill") ? atof(a["fill"].c_str()) : 0.8;
  if (type == "RORAM" || type == "NRORAM") {
    if (v == 8) return array<8>(type.c_str(), n, k, q, seed);
    if (v == 32) return array<32>(type.c_str(), n, k, q, seed);
    if (v == 56) return array<56>(type.c_str(), n, k, q, seed);
  } else if (type == "UnorderedMap") {
    if (k == 8 && v == 8) return umap<8, 8>(n, fill, q, seed);
    if (k == 8 && v == 56) return umap<8, 56>(n, fill, q, seed);
    if (k == 32 && v == 32) return umap<32, 32>(n, fill, q, seed);
  }
  fprintf(stderr, "cpp_stl_bench: unsupported case %s K=%zu V=%zu\n", type.c_str(), (size_t)k,
          (size_t)v);
  exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cpp_stl_bench TYPE N=.. Key_bytes=.. Value_bytes=.. ...\n");
    return 2;
  }
  std::map<std::string, std::string> a;
  for (int i = 2; i < argc; i++) {
    const char* eq = strchr(argv[i], '=');
    if (!eq) {
      fprintf(stderr, "cpp_stl_bench: expected k=v, not %s\n", argv[i]);
      return 2;
    }
    a[std::string(argv[i], eq - argv[i])] = eq + 1;
  }
  uint64_t seed = a.count("seed") ? strtoull(a["seed"].c_str(), nullptr, 10) : 1;
  uint64_t reps = a.count("reps") ? strtoull(a["reps"].c_str(), nullptr, 10) : 1;
  try {
    for (uint64_t r = 0; r < reps; r++) run_one(argv[1], a, &seed);
  } catch (const std::exception& e) {
    fprintf(stderr, "cpp_stl_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
