#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cost model of an obl_mpi deployment (docs/mpi.md, "Cost model").

    /usr/bin/python3 scripts/mpi_model.py LOG [--figure FILE.svg]

LOG holds the REPORT lines of a measured run: the log of scripts/mpi_bench.sh,
or a suite run with --mpi (logs/full_runs/*.jsonl or results/results.json of
scripts/run.py --mpi 2,3: its obl_mpi, obl_sharded and obl_batched cases).
From them the script measures five constants on the machine of that run:
  a_bal    balancer: us per record and sort level, (split + join) / (n log2 n),
           n = B + S*b records (the balancer's sorts dominate);
  access   per-request engine: us per omap access, a + c*log2(entries per shard);
  c_entry  scan engine: us per stored entry per batch, and c_req its per-request
           part (the batch's hash table and sorts: us per request and log2);
  c_byte   transport on loopback: us per byte a balancer sends and receives,
           (wait - shard work) / bytes;
  c_crypto AES-256-GCM: us per byte sealed or opened.
It checks the model against the measured obl_mpi points (ranks share two
cores there: the shard ranks' work is charged ceil(R / cores) times) and
predicts one-machine-per-rank deployments of L balancers and R shard
machines at N = 2^24 .. 2^30 over a 10 Gb/s network, and Snoopy's setting
(2M objects of 160 bytes, 18 machines).
"""
import json
import math
import re
import sys

REPORT = re.compile(r"REPORT_123([^|]*)\|([^|]*)\|([^|]*)\|(.*?)REPORT_123")
LAMBDA = 40
NET_BYTES_PER_US = 10e9 / 8 / 1e6   # 10 Gb/s
NET_RTT_US = 100.0                  # one round trip per epoch in a data centre


def parse(path):
    """(impl, fields) of every distinct REPORT line in the file (plain, or
    inside a suite log's JSON), and the run's description lines."""
    rows, seen, about = [], set(), []
    with open(path) as f:
        text = f.read()
    for line in text.splitlines():
        if line.startswith("# machine:") or line.startswith("# git:"):
            about.append(line[2:])
        elif '"event": "run_start"' in line:
            env = json.loads(line).get("env", {})
            about.append(f"suite run: {env.get('cpu', '')}, "
                         f"git {env.get('git', '')}")
    for m in REPORT.finditer(text):
        if m.group(0) in seen:
            continue
        seen.add(m.group(0))
        fields = {}
        for part in m.group(4).split("|"):
            k, _, v = part.partition(":=")
            try:
                fields[k.strip()] = float(v)
            except ValueError:
                pass
        rows.append((m.group(2), fields))
    return rows, about


def log_binom_tail(n, p, z):
    """log P[Bin(n, p) > z], as the library computes it."""
    if z >= n:
        return -math.inf
    ln = math.lgamma(n + 1)
    terms = []
    for k in range(z + 1, n + 1):
        t = ln - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + \
            (n - k) * math.log1p(-p)
        terms.append(t)
        if t - terms[0] < -60:
            break
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def shard_b(B, S):
    """b: the least n with P[Bin(B, 1/S) > n] <= 2^-40 (B when S = 1)."""
    if S <= 1:
        return B
    lim = -LAMBDA * math.log(2)
    lo, hi = B // S, B
    while lo < hi:  # the tail falls with n: bisect
        mid = (lo + hi) // 2
        if log_binom_tail(B, 1 / S, mid) > lim:
            lo = mid + 1
        else:
            hi = mid
    return max(lo, 1)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def fit_line(xs, ys):
    """Least squares y = a + c x."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    c = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - c * mx, c


def constants(rows):
    mpi = [f for impl, f in rows if impl == "obl_mpi"]
    k = {}
    bal, byte, crypto = [], [], []
    for f in mpi:
        B, S, b = f["Batch_size"], f["Shards"], f["Shard_batch"]
        n = B + S * b
        bal.append((f["Split_us"] + f["Join_us"]) / (n * math.log2(n)))
        per_epoch = f["Bytes_per_query"] * B
        byte.append(max(f["Wait_us"] - f["Shard_us"], 0) / per_epoch)
        crypto.append(f["Encrypt_us_per_query"] / f["Bytes_per_query"])
    k["a_bal"], k["c_byte"], k["c_crypto"] = median(bal), median(byte), median(crypto)
    batched = [f for impl, f in rows if impl == "obl_batched"]
    pr = [(math.log2(f["N"] * 1.25), f["Shard_us"] / f["Batch_size"])
          for f in batched if f.get("Engines") == 1]
    sc = [(f["N"] * 1.25, f["Shard_us"], f["Batch_size"])
          for f in batched if f.get("Engines") == 2]
    k["access_a"], k["access_c"] = fit_line([x for x, _ in pr], [y for _, y in pr])
    a, c = fit_line([x for x, _, _ in sc], [y for _, y, _ in sc])
    B = sc[0][2] if sc else 1
    k["c_entry"], k["c_req"] = c, max(a, 0) / (B * math.log2(max(B, 2)))
    return k


def ent_bytes(K, V):
    """Request plus answer bytes per entry (flags byte, key; found byte, value)."""
    return (1 + K) + (1 + V)


def epoch(k, L, R, N, B, K, V, net=None, share_cores=None):
    """(latency us, throughput q/s, parts) of one epoch with S = R shards."""
    S = R
    b = shard_b(B, S)
    n = B + S * b
    t_bal = k["a_bal"] * n * math.log2(n)
    cap = N * 1.25 / S
    m = L * b
    t_dedupe = k["a_bal"] * 3 * m * math.log2(max(m, 2))  # the shard's own merge of L batches
    per_req = (k["access_a"] + k["access_c"] * math.log2(cap)) * m
    scan = k["c_entry"] * cap + k["c_req"] * m * math.log2(max(m, 2))
    t_shard = t_dedupe + min(per_req, scan)
    bytes_bal = S * b * ent_bytes(K, V) + 2 * S * 56
    bytes_shard = L * b * ent_bytes(K, V) + 2 * L * 56
    t_crypto = k["c_crypto"] * max(bytes_bal, bytes_shard)
    if net is None:  # loopback, as measured
        t_net = k["c_byte"] * bytes_bal
    else:
        t_net = max(bytes_bal, bytes_shard) / net + NET_RTT_US
    shard_factor = math.ceil(R / share_cores) if share_cores else 1
    lat = t_bal + t_net + t_crypto + t_shard * shard_factor
    pipelined = L * B / max(t_bal, t_shard, t_net + t_crypto) * 1e6
    return lat, L * B / lat * 1e6, pipelined, dict(b=b, bal=t_bal, shard=t_shard, net=t_net,
                                                   engine="scan" if scan < per_req else "per-request")


def check(k, rows):
    print("| L | R | S | B | measured latency (ms) | model (ms) | measured q/s | model q/s |")
    print("|---|---|---|---|---|---|---|---|")
    for impl, f in rows:
        if impl != "obl_mpi":
            continue
        L, R = int(f["Balancers"]), int(f["Ranks"] - f["Balancers"])
        lat, qps, _, _ = epoch(k, L, R, f["N"], int(f["Batch_size"]), f["Key_bytes"],
                               f["Value_bytes"], share_cores=2)
        print(f"| {L} | {R} | {int(f['Shards'])} | {int(f['Batch_size'])} | "
              f"{f['Get_latency_us'] / 1e3:.1f} | {lat / 1e3:.1f} | "
              f"{f['Get_throughput_qps']:.0f} | {qps:.0f} |")


def best(k, machines, N, K, V, max_lat_us=1e6):
    """The (L, R, B) of `machines` with the most pipelined q/s under the latency bound."""
    top = None
    for L in range(1, machines):
        R = machines - L
        for B in (1024, 4096, 16384, 65536, 262144):
            lat, qps, pipe, parts = epoch(k, L, R, N, B, K, V, net=NET_BYTES_PER_US)
            if lat <= max_lat_us and (top is None or pipe > top[3]):
                top = (L, R, B, pipe, lat, parts)
    return top


def predict(k):
    print("| N | machines | L | R | B | b | engine | latency (ms) | q/s (pipelined) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for lg in (24, 26, 28, 30):
        for machines in (4, 18, 64):
            t = best(k, machines, 2 ** lg, 8, 56)
            if t:
                L, R, B, pipe, lat, parts = t
                print(f"| 2^{lg} | {machines} | {L} | {R} | {B} | {parts['b']} | "
                      f"{parts['engine']} | {lat / 1e3:.0f} | {pipe:.0f} |")
    t = best(k, 18, 2 * 10 ** 6, 8, 160)
    if t:
        L, R, B, pipe, lat, parts = t
        print(f"\nSnoopy's setting (2M objects of 160 bytes, 18 machines): L = {L}, R = {R}, "
              f"B = {B}, b = {parts['b']}, {parts['engine']} engine, latency "
              f"{lat / 1e3:.0f} ms, {pipe:.0f} q/s pipelined (Snoopy: 92K q/s)")


def figure(k, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    ms = [4, 6, 8, 12, 18, 24, 32, 48, 64]
    for lg in (24, 26, 28, 30):
        pts = [(m, best(k, m, 2 ** lg, 8, 56)) for m in ms]
        pts = [(m, t[3]) for m, t in pts if t]
        ax.plot([m for m, _ in pts], [q for _, q in pts], marker="o", label=f"N = 2^{lg}, 8/56")
    pts = [(m, best(k, m, 2 * 10 ** 6, 8, 160)) for m in ms]
    ax.plot([m for m, t in pts if t], [t[3] for m, t in pts if t], ls="--",
            label="2M x 160 B (model)")
    ax.plot([18], [92e3], marker="*", ms=14, ls="none", color="k", label="Snoopy, 18 machines")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("machines (L balancers + R shard machines, best split)")
    ax.set_ylabel("predicted gets/s (pipelined epochs, latency <= 1 s)")
    ax.set_title("obl_mpi cost model (constants measured on 2 cores)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    rows, about = parse(argv[1])
    # the model's constants and its check: epochs one at a time (obl-mpi
    # --pipeline 1 rows overlap the balancer with the shards)
    rows = [(impl, f) for impl, f in rows if not f.get("Pipeline")]
    need = {"obl_mpi", "obl_batched"} - {impl for impl, _ in rows}
    if need:
        print(f"mpi_model: {argv[1]} has no {' or '.join(sorted(need))} REPORT line "
              "(scripts/mpi_bench.sh, or scripts/run.py --mpi, measure them)", file=sys.stderr)
        return 1
    k = constants(rows)
    print(f"constants measured in {argv[1]}" + "".join(f"\n  {a}" for a in about))
    print("constants: " + ", ".join(f"{n} = {v:.4g}" for n, v in k.items()))
    print()
    check(k, rows)
    print()
    predict(k)
    if "--figure" in argv:
        figure(k, argv[argv.index("--figure") + 1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
