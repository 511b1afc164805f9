#!/usr/bin/python3
"""The bridge's benchmark harness: named scenarios, repeated and interleaved, on the
simulated fabric (or real devices), with medians and spread, JSON, CSV and PNG plots,
engine instructions per packet (callgrind), and a comparison of two builds.

  bench/harness.py [-B BUILDDIR] [--baseline BUILDDIR|COMMIT] [-n REPS] [--quick]
                   [-s SCENARIO,...] [--no-timed] [--no-callgrind] [-o OUTDIR]
                   [-d IBDEV -r ROCEDEV --send-dev DEV --listen-dev DEV]

Each scenario runs mcsender -> ib2roce -> mclisten (tools/, docs/mcsender.1,
docs/mclisten.1): a rate phase (mcsender --rate 0, as fast as its send queues allow; the
bridge's forwarding rate sampled from its console, the listener's from its report), a
below-capacity phase (half the lower of the two rates: what the bridge lost there), and
a latency phase (a fixed offered rate, one-way latency percentiles from mclisten); every
packet of every phase is accounted for (at the listener, the bridge's NIC or named drop
reasons, the listener's NIC; "unaccounted" must be 0; on the simulated fabric the NICs'
drops are the ports' own counters, read live with `simfab counters --json`, and a phase
ends only when the bridge has handled what its NIC took in: settle()); then, under
callgrind,
the engine's instructions per forwarded packet: two runs of the bridge collecting only
inside chan_burst with N and 3N packets offered, the difference of their instruction
counts over the difference of their forwarded packets (start-up and first sightings
cancel; a pair whose second run forwarded less than 1.5 times the first is refused as an
error, recorded in results.json). Counted: every object but the simulated libibverbs/librdmacm (the ib2roce
binary's own code, plus the libc and liburcu calls it makes: bench/cg_engine.awk with
sim=).

workersN (issue 28) is measured differently: for W in 1, 2, 4, 8, W sender processes at
once, each on an IB device of its own (a topology of 9 IB devices), first with no bridge
(the simulated fabric's own rate), then into a bridge of W workers; the rates over the
longest sender's duration, every packet accounted for (scaling_run).

Runs are interleaved: for each repetition, each scenario, each build (A B A B ...), so
that drift of the machine hits both builds alike. Only the bridge differs between the
builds: the simulated fabric, mcsender and mclisten come from BUILDDIR.

Results go to OUTDIR (default bench/results/harness-<date>, not in git): results.json,
results.csv, rate.png, latency.png, ipp.png (python3-matplotlib). docs/benchmarks.md
has the numbers of record.
"""

import argparse
import csv
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: description, groups, streams per group, sender QPs, sizes, options.
# "senders": distinct sender QPs through mcpkt processes (mcsender has at most 1024 QPs;
# mcpkt and simfabric 131072: 100 000 senders are one mcpkt process).
SCENARIOS = {
    "single": dict(desc="1 group, 1 sender, 64 B", groups=1, streams=1, qps=1, size="64"),
    "mix": dict(desc="market-data mix: 16 groups x 8 senders interleaved, 64-1024 B",
                groups=16, streams=8, qps=128, size="64,64,64,128,128,256,512,1024"),
    "pgm": dict(desc="1 PGM ODATA stream, 128 B", groups=1, streams=1, qps=1, size="128",
                pgm=True),
    "senders100k": dict(desc="100 000 senders (mcpkt --qps), 1 group, 64 B", groups=1,
                        mcpkt_senders=100000, size="64"),
    "groups4096": dict(desc="4096 groups, 1 sender each (16 QPs), 64 B", groups=4096,
                       streams=1, qps=16, size="64"),
    # Issue 28: many groups on one worker, its QPs on one CQ and one SRQ per side.
    "groups1k": dict(desc="1000 groups, 1 sender each (4 QPs), 64 B", groups=1000,
                     streams=1, qps=4, size="64"),
    "groups16k": dict(desc="16 000 groups (the IB MLID space), 1 sender each (64 QPs), 64 B",
                      groups=16000, streams=1, qps=64, size="64"),
    "workers2": dict(desc="2 workers, 2 groups x 2 senders, 64 B", groups=2, streams=2,
                     qps=4, size="64", workers=2),
    "direct": dict(desc="no bridge: sender -> listener on the same fabric, 64 B", groups=1,
                   streams=1, qps=1, size="64", direct=True),
    # Issue 28: workers scaling. For W in 1, 2, 4, 8: W sender processes (mcpkt, one QP,
    # as fast as they can), each on an IB device of its own (a topology of 9 IB devices),
    # each on a group of its own; first with no bridge (the simulated fabric's own send
    # rate), then into a bridge of W workers (mcqp=1: one group per pair, one pair per
    # worker), no RoCE listener. scaling_run().
    "workersN": dict(desc="1, 2, 4, 8 workers, one sender process per worker on its own "
                     "IB device, 64 B", groups=1, size="64", scaling=[1, 2, 4, 8]),
    # Issue 28: the bridge's ceiling against the number of groups. For G in 1, 1000, 4096,
    # 16000: one mcsender as fast as it sends (G groups interleaved, the QPs of groupsN)
    # into a bridge of one worker, and no listener: on a 2-vCPU machine the listener's
    # CPU is taken from the worker and the sender (ceiling_run).
    "ceiling": dict(desc="1, 1000, 4096, 16000 groups, no listener: what the bridge "
                    "forwards of what one sender offers, 64 B", groups=1, size="64",
                    ceiling=[1, 1000, 4096, 16000]),
    # Issue 28: the bridge's forwarding rate against the number of groups, whatever one
    # sender offers: for G in 1, 1000, 4096, 16000, the time one worker takes to empty a
    # receive queue filled while it was stopped (drain_run). On a 2-vCPU machine no
    # sender offers what the bridge forwards (the ceiling scenario's kept is 1): this
    # is how a timed rate of the bridge itself is taken there.
    "drain": dict(desc="1, 1000, 4096, 16000 groups, no listener: the rate at which one "
                  "worker forwards a full receive queue (bursts of 30 000 packets), 64 B", groups=1,
                  size="64", drain=[1, 1000, 4096, 16000]),
}
CEILING_QPS = {1: 1, 1000: 4, 4096: 16, 16000: 64}
QUICK_DEFAULT = ["single", "pgm"]


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def group_addrs(n):
    return ["239.3.%d.%d" % (i // 256, i % 256) for i in range(n)]


def build_info(builddir):
    """Commit, build type and compiler of a meson build directory."""
    info = {"builddir": builddir}
    try:
        d = json.load(open(os.path.join(builddir, "meson-info", "meson-info.json")))
        src = d["directories"]["source"]
    except (OSError, KeyError, ValueError):
        src = SRC
    for o in json.load(open(os.path.join(builddir, "meson-info", "intro-buildoptions.json"))):
        if o["name"] == "buildtype":
            info["buildtype"] = o["value"]
    r = subprocess.run(["git", "-C", src, "describe", "--always", "--dirty", "--abbrev=12"],
                       capture_output=True, text=True)
    info["commit"] = r.stdout.strip() or "unknown"
    cc = None
    try:
        for line in open(os.path.join(builddir, "build.ninja")):
            m = re.match(r"\s*command = (\S+) .* -c \$in", line)
            if m:
                cc = m.group(1)
                break
    except OSError:
        pass
    if cc:
        r = subprocess.run([cc, "--version"], capture_output=True, text=True)
        info["compiler"] = r.stdout.splitlines()[0] if r.stdout else cc
    else:
        info["compiler"] = "unknown"
    return info


def machine_info():
    cpu = platform.processor()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()
    return {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release(),
            "loadavg_at_start": [round(x, 2) for x in load]}


class Fabric:
    """Processes of one scenario run on the simulated fabric (or real devices)."""

    def __init__(self, args, tools_build, tmp):
        self.args = args
        self.tools = tools_build
        self.tmp = tmp
        self.env = dict(os.environ)
        if not args.real:
            self.env["LD_LIBRARY_PATH"] = os.path.join(tools_build, "simfabric")
            self.env["SIMFABRIC"] = "harness%d" % os.getpid()
            self.env.pop("SIMFABRIC_TOPOLOGY", None)
        self.procs = []

    def reset(self):
        if not self.args.real:
            subprocess.run([os.path.join(self.tools, "simfabric", "simfab"), "reset"],
                           env=self.env, capture_output=True)

    def port_counters(self):
        """Every simulated port's counters now (`simfab counters --json`: the live sums,
        exact at any moment, where the simulated sysfs files the bridge and mclisten read
        lag by a refresh period, more on a loaded machine); None on real devices."""
        if self.args.real:
            return None
        r = subprocess.run([os.path.join(self.tools, "simfabric", "simfab"), "counters",
                            "--json"], env=self.env, capture_output=True, text=True,
                           timeout=60)
        try:
            return json.loads(r.stdout)
        except ValueError:
            raise BenchError("simfab counters --json: exit %d: %s %s" % (
                r.returncode, r.stdout[-300:], r.stderr[-300:]))

    def start(self, name, argv):
        out = open(os.path.join(self.tmp, name + ".out"), "w")
        err = open(os.path.join(self.tmp, name + ".err"), "w")
        p = subprocess.Popen(argv, env=self.env, stdout=out, stderr=err)
        p.name = name
        self.procs.append(p)
        return p

    def text(self, name, kind="out"):
        try:
            return open(os.path.join(self.tmp, "%s.%s" % (name, kind))).read()
        except OSError:
            return ""

    def wait_for(self, name, proc, pattern, count, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if len(re.findall(pattern, self.text(name, "err"), re.M)) >= count:
                return
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        raise BenchError("%s: %d x '%s' not seen in %d s: %s" % (
            name, count, pattern, timeout, self.text(name, "err")[-800:]))

    def stop(self, proc, timeout=60):
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc in self.procs:
            self.procs.remove(proc)

    def cleanup(self):
        for p in list(self.procs):
            if p.poll() is None:
                p.kill()
                p.wait()
        self.procs = []
        self.reset()


def bridge_argv(args, bridge, sc, groups, ctl, cg_out=None):
    a = []
    if cg_out:
        # --fair-sched=yes: valgrind runs one thread at a time, and without a fair lock
        # the spinning worker starves the control thread (joins of thousands of groups
        # took more than 20 minutes); join_timeout as in bench/bridge_bench.sh.
        a = ["valgrind", "--tool=callgrind", "--fair-sched=yes",
             "--callgrind-out-file=" + cg_out, "--collect-atstart=no",
             "--toggle-collect=chan_burst", "--toggle-collect=chan_burst_mixed"]
    workers, buffers = str(sc.get("workers", 1)), "131072"
    rqdepth = str(sc.get("rqdepth", 16384))
    if cg_out:
        # For the cache profile of docs/benchmarks.md (issue 28), not the figure of
        # record: extra valgrind options (HARNESS_CG_OPTS="--cache-sim=yes"), and the
        # bridge's workers (0: event-driven, so that joining thousands of groups under
        # valgrind takes seconds), buffers and receive depth under callgrind.
        a += os.environ.get("HARNESS_CG_OPTS", "").split()
        workers = os.environ.get("HARNESS_CG_WORKERS", workers)
        buffers = os.environ.get("HARNESS_CG_BUFFERS", buffers)
        rqdepth = os.environ.get("HARNESS_CG_RQ", rqdepth)
    a += [bridge, "--debug", "--control", ctl, "-d", args.ib, "-r", args.roce,
          "--workers", workers,
          "-e", "statint=0", "-e", "buffers=" + buffers, "-e", "rqdepth=" + rqdepth,
          "-e", "senders=%d" % (2 * sc.get("mcpkt_senders", 65536)), "-e", "oversubscribe"]
    if cg_out:
        a += ["-e", "join_timeout=3600"]
    for g in groups:
        a += ["-m", g]
    return a


def bridge_counters(text):
    """fwd_pkts of the input side (IB) from the bridge's final counter lines."""
    m = re.search(r"^IB .*?\bfwd_pkts=(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def start_bridge(fab, args, bridge, sc, groups, name, cg_out=None):
    ctl = os.path.join(fab.tmp, name + ".sock")
    p = fab.start(name, bridge_argv(args, bridge, sc, groups, ctl, cg_out))
    t = 120 + len(groups) // 20 + (60 if cg_out else 0)
    fab.wait_for(name, p, r"ib2roce info: IB joined ", len(groups), t)
    fab.wait_for(name, p, r"ib2roce info: RoCE joined ", len(groups), t)
    return p


def sender_cmds(args, fab, sc, groups, count, rate, stream_id, warmup=0):
    """Command lines of the senders: one mcsender, or mcpkt processes for many QPs
    (with warmup: one packet per sender at that rate first, mcpkt --warmup)."""
    tools = fab.tools
    if sc.get("mcpkt_senders"):
        mcpkt = os.path.join(tools, "tests", "bridge", "mcpkt")
        total = sc["mcpkt_senders"]
        nproc = (total + 131071) // 131072
        per = [total // nproc + (1 if i < total % nproc else 0) for i in range(nproc)]
        # count packets per sender, at least 1; the processes run in turn.
        n = max(1, count // total)
        r = rate
        cmds = []
        for q in per:
            c = [mcpkt, "send", "-b", args.mcpkt_addr, "-g", groups[0], "-n", str(n),
                 "--qps", str(q), "-s", sc["size"], "--timeout", "600"]
            if r:
                c += ["--rate", str(r)]
            if warmup:
                c += ["--warmup", str(warmup)]
            cmds.append(c)
        return cmds
    c = [os.path.join(tools, "tools", "mcsender"), "-d" if not args.send_roce else "-r",
         args.send_dev, "--json", "--clock", "monotonic", "-R", str(rate),
         "-b", "1" if 0 < rate <= 20000 else "32",
         "-S", sc["size"], "-N", str(sc["streams"]), "-Q", str(sc["qps"]),
         "--stream-id", str(stream_id)]
    nstreams = sc["streams"] * len(groups)
    c += ["-n", str(max(1, count // nstreams))]
    if sc.get("pgm"):
        c += ["--pgm", "--spm-interval", "100"]
    return [c + groups]


def run_senders(fab, cmds, name):
    """Runs the senders one after the other (mcpkt processes in turn, each with new
    QPNs, when one process cannot hold the senders: simfabric has 131072 QPs in all).
    Returns {"sent": data packets of the counted pass, "wire": every packet put on the
    wire (SPMs and mcpkt's warm-up pass included), "warm": warm-up packets, "dt": the
    counted pass's duration}."""
    t0 = time.monotonic()
    ps = []
    for i, c in enumerate(cmds):
        p = fab.start("%s%d" % (name, i), c)
        ps.append(p)
        try:
            p.wait(900)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        fab.procs.remove(p)
    dt = time.monotonic() - t0
    sent = wire = warm = 0
    durations = []
    for i, p in enumerate(ps):
        out = fab.text("%s%d" % (name, i))
        if p.returncode != 0:
            raise BenchError("%s%d exited %d: %s %s" % (name, i, p.returncode, out[-400:],
                                                         fab.text("%s%d" % (name, i), "err")[-400:]))
        m = re.search(r'"duration_s"\s*:\s*([0-9.eE+-]+)|\bduration_s=([0-9.]+)', out)
        if m:
            durations.append(float(m.group(1) or m.group(2)))
        m = re.search(r'"sent"\s*:\s*(\d+)|^mcpkt: sent=(\d+)', out, re.M)
        if m:
            sent += int(m.group(1) or m.group(2))
        m = re.search(r'"spm"\s*:\s*(\d+)', out)
        wire += int(m.group(1)) if m else 0
        m = re.search(r'^mcpkt: warm sent=(\d+)', out, re.M)
        warm += int(m.group(1)) if m else 0
    if len(durations) == len(ps) and durations:
        dt = sum(durations)
    return {"sent": sent, "wire": sent + wire + warm, "warm": warm, "dt": dt}


def listen_argv(args, fab, sc, groups, busy):
    # The direct path listens on the senders' fabric (InfiniBand), without the bridge.
    dev = ["-d", args.direct_dev] if sc.get("direct") else ["-r", args.listen_dev]
    # mclisten posts --rq buffers on each of its QPs (240 groups each), one 4 KiB page
    # each (40 + MTU bytes): 8 192 in all, whatever the groups (at least 256 a QP: 16 000
    # groups, 67 QPs, 17 152). The simulated NIC that writes them is the bridge's worker's
    # CPU: 8 192 a QP (4 096 groups: 18 QPs, 600 MB) made every delivery a TLB miss and,
    # before simfabric mapped them populated, a page fault in the worker, so that the
    # groups scenarios measured the listener's memory (docs/benchmarks.md, issue 28).
    nqp = (len(groups) + 239) // 240
    rq = max(256, 8192 // nqp)
    return [os.path.join(fab.tools, "tools", "mclisten")] + dev + ["--json",
            "--rq", str(rq), "-D", "3600"] + (["--busy"] if busy else []) + groups


def stream_id(s):
    """mcsender's stream id of a stream of mclisten's report: "id:N", or for PGM
    "tsi:GGGGGGGG4d43.PORT" (the GSI's first 4 bytes are the id of stream 0)."""
    v = str(s.get("stream", ""))
    try:
        if v.startswith("id:"):
            return int(v[3:])
        if v.startswith("tsi:"):
            return int(v[4:12], 16)
    except ValueError:
        pass
    return None


def percentiles(streams, lo, hi):
    """Median over the streams with ids in [lo, hi) of each latency percentile (us)."""
    keys = ("p50", "p90", "p99", "p99.9")
    vals = {k: [] for k in keys}
    for s in streams:
        sid = stream_id(s)
        if sid is None or not lo <= sid < hi:
            continue
        lat = s.get("latency_ns")
        if not lat or not lat.get("count"):
            continue
        for k in keys:
            if k in lat:
                vals[k].append(lat[k] / 1000.0)
    return {k: (statistics.median(v) if v else None) for k, v in vals.items()}


def listen_report(fab, lst, name):
    time.sleep(0.5)
    fab.stop(lst)
    out = fab.text(name)
    try:
        return json.loads(out[out.index("{"):])
    except ValueError:
        raise BenchError("mclisten: no JSON report: %s %s" % (
            out[-400:], fab.text(name, "err")[-400:]))


def bridge_stats(fab, ctl):
    """The bridge's `stats --json` (through bcom): its counters since its start."""
    r = subprocess.run([bcom_bin(fab.tools), "--control", ctl, "stats",
                        "--json"], env=fab.env, capture_output=True, text=True, timeout=60)
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise BenchError("bcom stats --json: exit %d: %s %s" % (r.returncode, r.stdout[-300:],
                                                               r.stderr[-300:]))


class FwdSampler(threading.Thread):
    """Samples the bridge's forwarded packets (IB fwd_pkts of the console's `channels`
    table, one short reply, on one console connection) every `interval` seconds while a
    phase runs: the bridge's own forwarding rate, whatever the listener keeps up with."""

    def __init__(self, ctl, interval=0.005):
        super().__init__(daemon=True)
        self.ctl = ctl
        self.interval = interval
        self.samples = []
        self.error = None
        self.done = threading.Event()
        self.ready = threading.Event()

    def query(self, sock, buf):
        sock.sendall(b"channels\n")
        while b"\0" not in buf or not buf.split(b"\0", 1)[1].endswith(b"\n"):
            d = sock.recv(65536)
            if not d:
                raise OSError("console closed")
            buf += d
        text, rest = buf.split(b"\0", 1)
        rows = text.decode(errors="replace").splitlines()
        head = rows[0].split()
        col = head.index("fwd_pkts")
        return sum(int(r.split()[col]) for r in rows[1:] if r.split()[:1] == ["IB"]), \
            rest[rest.index(b"\n") + 1:]

    def run(self):
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self.ctl)
            buf = b""
            while True:
                v, buf = self.query(sock, buf)
                self.samples.append((time.monotonic(), v))
                self.ready.set()
                if self.done.wait(self.interval):
                    break
            sock.close()
        except (OSError, ValueError, IndexError) as e:
            self.error = str(e)
        self.ready.set()

    def stop(self):
        self.done.set()
        self.join(30)

    def rate(self, skip=0):
        """Packets forwarded over the time from the first to the last change of the
        count, each end taken halfway between the samples around it (after the first
        `skip` packets: a warm-up pass); None with too few samples."""
        sm = self.samples
        if len(sm) < 3:
            return None
        base = sm[0][1] + skip
        a = next((i for i in range(1, len(sm)) if sm[i][1] > base), None)
        if a is None:
            return None
        z = next(i for i in range(len(sm)) if sm[i][1] == sm[-1][1])
        if z <= a:
            return None
        t0 = (sm[a - 1][0] + sm[a][0]) / 2
        t1 = (sm[z - 1][0] + sm[z][0]) / 2
        return (sm[z][1] - sm[a - 1][1]) / (t1 - t0) if t1 > t0 else None


def worker_sched(pid):
    """The bridge's workers (threads ib2roce-wN) as the scheduler saw them: {"wait_ms": time
    runnable but not on a CPU (schedstat), "preempted": involuntary context switches}, or
    None where /proc does not say (another host's bridge, no schedstats)."""
    def text(path):
        with open(path) as f:
            return f.read()

    wait = pre = 0
    found = False
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            d = "/proc/%d/task/%s/" % (pid, tid)
            if not text(d + "comm").startswith("ib2roce-w"):
                continue
            wait += int(text(d + "schedstat").split()[1])
            m = re.search(r"^nonvoluntary_ctxt_switches:\s*(\d+)", text(d + "status"), re.M)
            pre += int(m.group(1)) if m else 0
            found = True
    except (OSError, ValueError, IndexError):
        return None
    return {"wait_ms": wait / 1e6, "preempted": pre} if found else None


def side_delta(st0, st1, name):
    """One side's counters of stats st1 less those of st0 (st0 None: since the start);
    drop_reasons flattened to drop_<reason>."""
    def flat(st):
        if st is None:
            return {}
        sd = next(x for x in st["sides"] if x["side"] == name)
        d = {k: v for k, v in sd.items() if isinstance(v, int) and not isinstance(v, bool)}
        d["nic_rx_dropped"] = sd.get("nic_rx_dropped")
        for k, v in sd.get("drop_reasons", {}).items():
            d["drop_" + k] = v
        return d
    a, b = flat(st0), flat(st1)
    out = {}
    for k, v in b.items():
        if v is None or (st0 is not None and a.get(k) is None):
            out[k] = None
        else:
            out[k] = v - a.get(k, 0)
    return out


# The simulated ports' drop counters (docs/simfabric.md, "Counters"): a copy that reached
# a port and was dropped there, by reason. xmit_pkts, rcv_pkts and the byte counts are not
# drops.
PORT_DROPS = ("out_of_buffer", "qkey_viol", "sim_loss", "port_down", "no_member",
              "cq_overrun", "len_err", "prot_err", "mtu_drop", "qp_not_ready")


def port_delta(n0, n1, dev):
    """One simulated port's counters of n1 less those of n0 (`simfab counters --json`)."""
    a, b = (n0 or {}).get(dev, {}), (n1 or {}).get(dev, {})
    return {k: v - a.get(k, 0) for k, v in b.items()}


def port_drops(d):
    """A port's drops by counter, the non-zero ones: {"out_of_buffer": 12, ...}."""
    return {k: d[k] for k in PORT_DROPS if d.get(k)}


def accounting(wire, st0, st1, rep, ports=None):
    """Where the packets a phase put on the wire went (InfiniBand senders, RoCE listener):

      wire = at the listener + its NIC's drops          (direct: no bridge)
      wire = the senders' NIC drops + the bridge's NIC drops + the bridge's named drops
             (IB receive drops, RoCE tx_full and tx_error) + still in the bridge's
             receive queue + at the listener + the listener NIC's drops + unaccounted

    On the simulated fabric the NICs' drops are the ports' own counters (`ports`: the
    deltas of `simfab counters` over the phase, keys "sender", "bridge", "bridge_out",
    "listener"), every drop counter of the port: out_of_buffer, and also Q_Key
    violations, injected loss, a port down, ... (PORT_DROPS). On real devices they are
    the out_of_buffer counters the bridge and mclisten read (nic_rx_dropped).

    unaccounted is what no counter names: it must be 0 (a loss on the simulated wire, or
    in the bridge without a counter). A NIC counter that is unavailable (no hw_counters)
    leaves its drops in unaccounted and is recorded as None."""
    got = sum(g.get("packets", 0) for g in rep.get("groups", []))
    lnic = rep.get("totals", {}).get("nic_rx_dropped")
    a = {"wire": wire, "listener": got, "listener_nic": lnic, "bridge_nic": None,
         "bridge_drops": {}, "bridge_lost": 0, "sender_nic": 0, "bridge_rq": 0}
    if ports is not None:
        ld = port_drops(ports["listener"])
        a["listener_nic"] = sum(ld.values())
        a["listener_nic_by"] = ld
        a["listener_nic_reported"] = lnic
        # What the senders' port did not put on the wire (its port down).
        sd = port_drops(ports["sender"])
        a["sender_nic"] = sum(sd.values())
        a["sender_nic_by"] = sd
        a["sender_port_xmit"] = ports["sender"].get("xmit_pkts")
    if st1 is not None:
        ib, roce = side_delta(st0, st1, "IB"), side_delta(st0, st1, "RoCE")
        a["bridge_nic"] = ib.get("nic_rx_dropped")
        drops = {k[5:]: v for k, v in ib.items() if k.startswith("drop_") and v and
                 k not in ("drop_tx_full", "drop_tx_error")}
        for k in ("tx_full", "tx_error"):
            if roce.get("drop_" + k):
                drops[k] = roce["drop_" + k]
        a["bridge_rx"] = ib.get("rx_pkts")
        a["bridge_fwd"] = ib.get("fwd_pkts")
        if ports is not None:
            bd = port_drops(ports["bridge"])
            a["bridge_nic_reported"] = a["bridge_nic"]
            a["bridge_nic"] = sum(bd.values())
            a["bridge_nic_by"] = bd
            # Forwarded, but its RoCE port was down: not on the wire.
            if ports["bridge_out"].get("port_down"):
                drops["out_port_down"] = ports["bridge_out"]["port_down"]
            # Taken in by the bridge's NIC, not yet polled by its worker when the phase
            # ended (settle() waits for it: 0 unless the worker stayed off its CPU).
            a["bridge_rq"] = max(0, ports["bridge"].get("rcv_pkts", 0) - (a["bridge_rx"] or 0))
        a["bridge_drops"] = drops
        a["bridge_lost"] = (a["bridge_nic"] or 0) + sum(drops.values())
    a["unaccounted"] = (wire - got - (a["listener_nic"] or 0) - a["bridge_lost"] -
                        a["sender_nic"] - a["bridge_rq"])
    a["loss"] = max(0.0, 1.0 - got / wire) if wire else None
    return a


def settle(fab, ctl, st0, n0, args, timeout=60):
    """Waits (at most `timeout` seconds) until a phase's packets have all gone through:
    the bridge's worker polled what its NIC took in (IB rx_pkts against the port's
    rcv_pkts on the simulated fabric), and handled it (forwarded or dropped), and nothing
    moved on the listener's port since the last look. A worker kept off its CPU for a
    second by other processes still holds packets when the senders end: read then, they
    were in no counter (the listener stopped before the bridge forwarded them). Returns
    True when settled."""
    end = time.monotonic() + timeout
    prev = None
    while True:
        st = bridge_stats(fab, ctl) if ctl else None
        n = fab.port_counters()
        key = []
        done = True
        if st is not None:
            ib = side_delta(st0, st, "IB")
            handled = (ib.get("fwd_pkts") or 0) + sum(
                v for k, v in ib.items() if k.startswith("drop_") and v and
                k not in ("drop_tx_full", "drop_tx_error"))
            key += [ib.get("rx_pkts"), handled, side_delta(st0, st, "RoCE").get("tx_pkts")]
            done = handled >= (ib.get("rx_pkts") or 0)
            if n is not None:
                done = done and (ib.get("rx_pkts") or 0) >= port_delta(n0, n, args.ib).get(
                    "rcv_pkts", 0)
        if n is not None:
            key.append(n.get(fab.listen_port, {}))
        if done and key == prev:
            return True
        if time.monotonic() > end:
            return False
        prev = key
        time.sleep(0.2)


def where(a):
    """Where a phase's lost packets went, in words: "bridge NIC 239 000, ..."."""
    parts = []
    if a.get("sender_nic"):
        parts.append("sender NIC %d (%s)" % (a["sender_nic"], ", ".join(
            "%s %d" % kv for kv in sorted(a.get("sender_nic_by", {}).items()))))
    if a.get("bridge_nic"):
        by = a.get("bridge_nic_by")
        parts.append("bridge NIC %d" % a["bridge_nic"] + (" (%s)" % ", ".join(
            "%s %d" % kv for kv in sorted(by.items())) if by else ""))
    for k, v in sorted(a.get("bridge_drops", {}).items()):
        parts.append("bridge drop_%s %d" % (k, v))
    if a.get("bridge_rq"):
        parts.append("in the bridge's receive queue %d" % a["bridge_rq"])
    if a.get("listener_nic"):
        by = a.get("listener_nic_by")
        parts.append("listener NIC %d" % a["listener_nic"] + (" (%s)" % ", ".join(
            "%s %d" % kv for kv in sorted(by.items())) if by else ""))
    if a.get("unaccounted"):
        parts.append("UNACCOUNTED %d" % a["unaccounted"])
    if (a.get("bridge_nic") or a.get("bridge_rq")) and a.get("worker_wait_ms") is not None:
        parts.append("while the worker waited %.1f ms for a CPU, preempted %d times" % (
            a["worker_wait_ms"], a["worker_preempted"]))
    return ", ".join(parts) or "none lost"


def accounting_totals(acc_detail, scenario, label):
    """The accounting of every timed run of one scenario and build, summed per phase."""
    tot = {}
    for d in acc_detail:
        if d["scenario"] != scenario or d["build"] != label:
            continue
        for ph, a in d["phases"].items():
            t = tot.setdefault(ph, {"wire": 0, "listener": 0, "bridge_nic": 0,
                                    "listener_nic": 0, "sender_nic": 0, "bridge_rq": 0,
                                    "unaccounted": 0, "bridge_drops": {}})
            for k in ("wire", "listener", "bridge_nic", "listener_nic", "sender_nic",
                      "bridge_rq", "unaccounted"):
                t[k] += a.get(k) or 0
            for by in ("bridge_drops", "bridge_nic_by", "listener_nic_by", "sender_nic_by"):
                for k, v in a.get(by, {}).items():
                    t.setdefault(by, {})
                    t[by][k] = t[by].get(k, 0) + v
            for k in ("worker_wait_ms", "worker_preempted"):
                if a.get(k) is not None:
                    t[k] = t.get(k, 0) + a[k]
    return tot


def timed_run(args, fab, bridge, sc, quick):
    """A rate phase, a below-capacity phase and a latency phase: {"rate_pps", "loss",
    "loss_below", "unaccounted", "p50", ...}; each phase has a listener of its own, and
    its packets are accounted for (accounting()) from the bridge's counters."""
    groups = group_addrs(sc["groups"])
    fab.reset()
    fab.listen_port = args.direct_dev if sc.get("direct") else args.listen_dev
    b = None
    ctl = os.path.join(fab.tmp, "bridge.sock")
    acc = {}

    def phase(label, lname, busy, count, rate, sid, warmup=0, sample=False):
        lst = fab.start(lname, listen_argv(args, fab, sc, groups, busy))
        fab.wait_for(lname, lst, r"mclisten: joined", 1, 120)
        # The baselines after the listener joined: its port's counters are its own.
        st0 = bridge_stats(fab, ctl) if b is not None else None
        n0 = fab.port_counters()
        ws0 = worker_sched(b.pid) if b is not None else None
        smp = None
        if sample and b is not None:
            # Every 5 ms, less often with more channel pairs (the reply has two rows a
            # pair, formatted by the bridge's control thread, whose CPU the sender and
            # the listener share on a small machine): 25 ms at 4 096 groups (18 pairs),
            # 85 ms at 16 000 (67), against rate phases of seconds.
            smp = FwdSampler(ctl, 0.005 * max(1, -(-((len(groups) + 239) // 240) // 4)))
            smp.start()
            smp.ready.wait(10)
        try:
            snd = run_senders(fab, sender_cmds(args, fab, sc, groups, count, rate, sid,
                                               warmup), "send_" + label)
            settled = settle(fab, ctl if b is not None else None, st0, n0, args)
            rep = listen_report(fab, lst, lname)
        finally:
            if smp:
                smp.stop()
        if smp and smp.error:
            raise BenchError("console sampler: %s" % smp.error)
        st1 = bridge_stats(fab, ctl) if b is not None else None
        n1 = fab.port_counters()
        ports = None
        if n1 is not None:
            ports = {"sender": port_delta(n0, n1, args.send_dev),
                     "bridge": port_delta(n0, n1, args.ib),
                     "bridge_out": port_delta(n0, n1, args.roce),
                     "listener": port_delta(n0, n1, fab.listen_port)}
        acc[label] = accounting(snd["wire"], st0, st1, rep, ports)
        acc[label]["settled"] = settled
        ws1 = worker_sched(b.pid) if b is not None else None
        if ws0 and ws1:
            # A worker kept off its CPU (two vCPUs for sender, worker and listener) drops
            # at its NIC what its receive queue cannot hold meanwhile.
            acc[label]["worker_wait_ms"] = round(ws1["wait_ms"] - ws0["wait_ms"], 3)
            acc[label]["worker_preempted"] = ws1["preempted"] - ws0["preempted"]
        snd["fwd_pps"] = smp.rate(snd["warm"]) if smp else None
        return snd, rep

    try:
        if not sc.get("direct"):
            b = start_bridge(fab, args, bridge, sc, groups, "bridge")
        count = args.count if not quick else 20000
        if sc.get("mcpkt_senders"):
            count = max(count, 2 * sc["mcpkt_senders"])
        # mcpkt: every sender is seen once at a rate the bridge keeps up with, so that the
        # rate is that of known senders (not of 100 000 first sightings).
        snd, rep = phase("rate", "listen", True, count, 0, 1000000,
                         args.warm_rate if sc.get("mcpkt_senders") else 0, sample=True)
        streams = rep.get("streams", [])
        res = {"sent": snd["sent"], "sender_s": snd["dt"]}
        if sc.get("mcpkt_senders"):
            # The counted pass's packets over its duration at the sender (the listener
            # does not time mcpkt's packets): mcpkt offers faster than the bridge forwards,
            # what the bridge still holds when the sender ends is at most its receive queue.
            rx = max(0, sum(g.get("packets", 0) for g in rep.get("groups", [])) - snd["warm"])
            dt = snd["dt"]
        else:
            # From the first to the last packet at the listener: the longest stream's.
            rx = sum(s.get("received", 0) for s in streams)
            dt = max((s["received"] / s["rate_pps"] for s in streams
                      if s.get("rate_pps")), default=snd["dt"])
        res["received"] = rx
        res["rx_pps"] = rx / dt if dt > 0 else None
        # The bridge's forwarding rate, from its own counter; the direct path's is the
        # listener's.
        res["rate_pps"] = snd["fwd_pps"] if b is not None else res["rx_pps"]
        res["loss"] = acc["rate"]["loss"]
        cap = min(x for x in (res["rate_pps"], res["rx_pps"]) if x) if res["rate_pps"] else None
        # Packets of one phase still queued in the bridge reach the next listener too:
        # they settle first (a second), and only the phase's own streams count.
        if cap and args.below > 0:
            time.sleep(1)
            bcount = args.below_count if not quick else 10000
            bcount = max(bcount, 4 * sc.get("streams", 1) * len(groups),
                         sc.get("mcpkt_senders", 0))
            # The listener waits for completion events: one thread fewer spinning on the
            # CPUs the bridge's worker needs (what it drops is counted at its NIC).
            phase("below", "listen_below", False, bcount,
                  max(1, int(cap * args.below)), 4000000,
                  args.warm_rate if sc.get("mcpkt_senders") else 0)
            a = acc["below"]
            res["loss_below"] = a["loss"]
            res["bridge_loss_below"] = a["bridge_lost"] / a["wire"] if a["wire"] else None
        if not sc.get("mcpkt_senders"):
            time.sleep(1)
            lcount = args.lat_count if not quick else 1000
            lcount = max(lcount, 4 * sc["streams"] * len(groups))
            snd, rep = phase("latency", "listen2", False, lcount, args.lat_rate, 2000000)
            res.update(percentiles(rep.get("streams", []), 2000000, 3000000))
        res["unaccounted"] = sum(a["unaccounted"] for a in acc.values())
        res["accounting"] = acc
        return res
    finally:
        if b is not None:
            fab.stop(b)
        fab.cleanup()


SCALING_IB = 9  # IB devices of the scaling topology: the bridge's and 8 senders'


def scaling_topology(path):
    """A topology with SCALING_IB IB devices (sim_ib0 the bridge's, sim_ib1.. the
    senders', 198.18.0.N) and two RoCE devices; the fabric's other defaults."""
    with open(path, "w") as f:
        f.write("segment ib0 ib\nsegment eth0 eth\n")
        for i in range(SCALING_IB):
            f.write("device sim_ib%d segment ib0 ipv4 198.18.0.%d/24 numa 0\n" % (i, i + 1))
        for i in range(2):
            f.write("device sim_roce%d segment eth0 ipv4 198.19.0.%d/24 numa 0\n" % (i, i + 1))


def scaling_run(args, fab, bridge, sc, nw, quick):
    """W sender processes at once, each on its own IB device and group: without a bridge
    (offered: the fabric's own rate), then into a bridge of W workers. Returns
    {"fabric_mpps", "offered_mpps", "fwd_mpps", "sent", "fwd", "drops", "nic_drop",
    "unaccounted"}: the rates over the longest sender's duration; unaccounted = sent -
    (IB rx_pkts + nic_rx_dropped) of the bridge run, must be 0."""
    env = dict(fab.env)
    env["SIMFABRIC"] = "hscale%d" % os.getpid()
    env["SIMFABRIC_TOPOLOGY"] = os.path.join(fab.tmp, "scaling.topo")
    scaling_topology(env["SIMFABRIC_TOPOLOGY"])
    simfab = os.path.join(fab.tools, "simfabric", "simfab")
    mcpkt = os.path.join(fab.tools, "tests", "bridge", "mcpkt")
    n = 200000 if quick else args.scaling_count
    groups = ["239.3.0.%d" % (i + 1) for i in range(nw)]
    out = {}
    saved = fab.env
    fab.env = env
    try:
        for with_bridge in (False, True):
            subprocess.run([simfab, "reset"], env=env, capture_output=True)
            b = None
            ctl = os.path.join(fab.tmp, "scale.sock")
            if with_bridge:
                a = [bridge, "--debug", "--control", ctl, "-d", "sim_ib0", "-r", "sim_roce0",
                     "--workers", str(nw), "-e", "statint=0", "-e", "mcqp=1",
                     "-e", "buffers=196608", "-e", "rqdepth=8192", "-e", "oversubscribe"]
                for g in groups:
                    a += ["-m", g]
                b = fab.start("scalebridge", a)
                fab.wait_for("scalebridge", b, r"ib2roce info: RoCE joined ", nw, 120)
            ps = [fab.start("scalesend%d" % i,
                            [mcpkt, "send", "-b", "198.18.0.%d" % (i + 2), "-g", groups[i],
                             "-n", str(n), "-s", sc["size"], "--timeout", "600"])
                  for i in range(nw)]
            sent, dur = 0, 0.0
            for i, p in enumerate(ps):
                p.wait(900)
                fab.procs.remove(p)
                t = fab.text("scalesend%d" % i)
                m = re.search(r"^mcpkt: sent=(\d+) .*duration_s=([0-9.]+)", t, re.M)
                if p.returncode != 0 or not m:
                    raise BenchError("scaling sender %d: exit %d: %s %s" % (
                        i, p.returncode, t[-300:], fab.text("scalesend%d" % i, "err")[-300:]))
                sent += int(m.group(1))
                dur = max(dur, float(m.group(2)))
            if not with_bridge:
                out["fabric_mpps"] = sent / dur / 1e6 if dur else None
                continue
            time.sleep(1)
            st = bridge_stats(fab, ctl)
            fab.stop(b)
            ib = [x for x in st["sides"] if x["side"] == "IB"][0]
            nic = ib.get("nic_rx_dropped") or 0
            out.update({"offered_mpps": sent / dur / 1e6 if dur else None,
                        "fwd_mpps": ib["fwd_pkts"] / dur / 1e6 if dur else None,
                        "sent": sent, "fwd": ib["fwd_pkts"], "drops": ib["drops"],
                        "nic_drop": nic, "unaccounted": sent - ib["rx_pkts"] - nic})
        return out
    finally:
        fab.env = saved
        for p in list(fab.procs):
            if p.poll() is None:
                p.kill()
                p.wait()
        fab.procs = []
        subprocess.run([simfab, "reset"], env=env, capture_output=True)


# perf record's samples a second (cpu-clock) of --perf; HARNESS_PERF_FREQ for a finer
# profile of short phases (perf annotate of a --keep'ed file).
PERF_FREQ = int(os.environ.get("HARNESS_PERF_FREQ", "4000"))


def perf_worker(pid, out):
    """perf record (cpu-clock, PERF_FREQ a second) of the bridge's worker thread ib2roce-w0 of
    process pid into out; None where perf or the thread is missing."""
    if not shutil.which("perf"):
        return None
    try:
        tid = next(t for t in os.listdir("/proc/%d/task" % pid)
                   if open("/proc/%d/task/%s/comm" % (pid, t)).read().startswith("ib2roce-w0"))
    except (OSError, StopIteration):
        return None
    return subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", str(PERF_FREQ), "-t", tid,
                             "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def perf_end(pf):
    """Ends a perf_worker recording (SIGINT: perf writes its file), or kills one still
    running after an error (the finally clauses); None does nothing."""
    if pf and pf.poll() is None:
        pf.send_signal(signal.SIGINT)
        try:
            pf.wait(60)
        except subprocess.TimeoutExpired:
            pf.kill()
            pf.wait()


def perf_symbols(path):
    """Samples per symbol of a perf.data file: {symbol: samples}."""
    r = subprocess.run(["perf", "report", "-i", path, "-n", "--no-children", "-g", "none",
                        "--sort", "sym"], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*[0-9.]+%\s+(\d+)\s+\[[^]]*\]\s+(\S+)", line)
        if m:
            out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1))
    return out


# What ceiling_run counts as the engine's time a packet: the burst and the sorting and
# fetching ahead of a poll of several QPs.
ENGINE_SYMS = ("chan_burst", "chan_burst_mixed", "wside_poll_mixed")


def ceiling_run(args, fab, bridge, sc, ng, quick):
    """One sender (mcsender -R 0, ng groups interleaved over CEILING_QPS[ng] QPs) into a
    bridge of one worker with no RoCE listener: {"offered_mpps", "fwd_mpps", "sent",
    "fwd", "drops", "nic_drop", "unaccounted"} over the sender's duration (unaccounted =
    sent - (IB rx_pkts + its NIC's drops), must be 0); with args.perf also "engine_us",
    the worker's cpu-clock samples in ENGINE_SYMS a forwarded packet (the worker's other
    samples are mostly polls of an empty queue: it spins while the sender starts)."""
    groups = group_addrs(ng)
    gsc = dict(sc, groups=ng, streams=1, qps=CEILING_QPS.get(ng, (ng + 239) // 240))
    fab.reset()
    ctl = os.path.join(fab.tmp, "ceiling.sock")
    b = start_bridge(fab, args, bridge, gsc, groups, "ceiling")
    pf = None
    try:
        st0 = bridge_stats(fab, ctl)
        if args.perf:
            pf = perf_worker(b.pid, os.path.join(fab.tmp, "ceiling.perf"))
        count = 200000 if quick else args.count
        snd = run_senders(fab, sender_cmds(args, fab, gsc, groups, count, 0, 5000000),
                          "ceilsend")
        perf_end(pf)
        time.sleep(1)
        st1 = bridge_stats(fab, ctl)
    finally:
        perf_end(pf)
        fab.stop(b)
        fab.cleanup()
    d = side_delta(st0, st1, "IB")
    sent, dur = snd["sent"], snd["dt"]
    nic = d.get("nic_rx_dropped") or 0
    out = {"sent": sent, "fwd": d["fwd_pkts"], "drops": d["drops"], "nic_drop": nic,
           "offered_mpps": sent / dur / 1e6 if dur else None,
           "fwd_mpps": d["fwd_pkts"] / dur / 1e6 if dur else None,
           "kept": d["fwd_pkts"] / sent if sent else None,
           "unaccounted": snd["wire"] - d["rx_pkts"] - nic}
    if pf and d["fwd_pkts"]:
        syms = perf_symbols(os.path.join(fab.tmp, "ceiling.perf"))
        us = 1e6 / PERF_FREQ / d["fwd_pkts"]
        out["engine_us"] = sum(syms.get(k, 0) for k in ENGINE_SYMS) * us
    return out


# The drain scenario's burst: what the bridge's receive queue holds (one worker, one SRQ
# a side, rqdepth=32768: 32 767 on mlx5 and simfabric, max_srq_wr), less the refill's
# chains and a margin. The sender goes round-robin over the groups across its stops, so
# a packet's group is as far from its last packet as in interleaved traffic.
DRAIN_FILL = 30000


def proc_stopped(pid):
    """Whether every thread of process pid is stopped (state T, a job-control stop)."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
        for tid in tids:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "T":
                    return False
        return bool(tids)
    except OSError:
        return False


def wait_stopped(proc, what, timeout=60):
    """Waits until proc stopped (job control); BenchError when it exits or times out."""
    end = time.monotonic() + timeout
    while not proc_stopped(proc.pid):
        if proc.poll() is not None:
            raise BenchError("%s exited %d instead of stopping" % (what, proc.returncode))
        if time.monotonic() > end:
            raise BenchError("%s did not stop in %d s" % (what, timeout))
        time.sleep(0.001)


def spare_cpu(pid):
    """A CPU of this process's set where no worker of bridge pid may run (threads named
    ib2roce-w*), or None."""
    busy = set()
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().startswith("ib2roce-w"):
                    busy |= os.sched_getaffinity(int(tid))
    except OSError:
        return None
    free = sorted(os.sched_getaffinity(0) - busy)
    return free[0] if busy and free else None


def drain_run(args, fab, bridge, sc, ng, quick):
    """The bridge's forwarding rate at ng groups, whatever a sender offers: one mcsender
    (ng groups interleaved over CEILING_QPS[ng] QPs, --stop-every DRAIN_FILL) and a bridge
    of one worker, no listener. A first burst is forwarded with the bridge running (its
    senders and flows are then known: no first sighting is timed); then, per round, the
    bridge is stopped (SIGSTOP), the sender sends one burst into its receive queue and
    stops itself, and bench/drainwatch continues the bridge and times its RoCE port
    transmitting the burst (from a CPU the worker does not run on). A burst that drainwatch could not time (it got fewer than two
    reads inside the drain: on 2 vCPUs it may wait for a CPU that long) is left out and
    another one sent, twice the rounds at most. {"mpps": median over the bursts timed,
    "rounds": [each one's Mpps], "untimed": bursts not timed, "fill", "sent", "fwd",
    "drops", "nic_drop", "unaccounted"} (nic_drop: a burst that did not fit in the
    receive queue, whose remainder is still timed; unaccounted = sent - (IB rx_pkts + its
    NIC's drops), must be 0)."""
    if args.real:
        raise BenchError("drain: simulated fabric only (bench/drainwatch reads its counters)")
    groups = group_addrs(ng)
    fill = DRAIN_FILL
    rounds = 3 if quick else args.drain_rounds
    gsc = dict(sc, groups=ng, streams=1, qps=CEILING_QPS.get(ng, (ng + 239) // 240),
               rqdepth=32768)
    fab.reset()
    ctl = os.path.join(fab.tmp, "drain.sock")
    b = start_bridge(fab, args, bridge, gsc, groups, "drain")
    snd = pf = None
    mpps = []
    bursts = fwd0 = 0
    try:
        st0 = bridge_stats(fab, ctl)
        cpu = spare_cpu(b.pid)
        pin = ["-c", str(cpu)] if cpu is not None else []
        # Enough packets a stream for the first burst and every retry; the sender is
        # ended (SIGTERM while stopped) once the rounds are timed.
        per = -(-fill * (2 * rounds + 1) // ng)
        cmd = sender_cmds(args, fab, gsc, groups, per * ng, 0, 6000000)[0]
        snd = fab.start("drainsend", cmd + ["--stop-every", str(fill)])
        wait_stopped(snd, "mcsender (first burst)")
        bursts = 1
        end = time.monotonic() + 60
        while True:
            d = side_delta(st0, bridge_stats(fab, ctl), "IB")
            if d["rx_pkts"] + (d.get("nic_rx_dropped") or 0) >= fill and \
                    d["fwd_pkts"] + d["drops"] >= d["rx_pkts"]:
                break
            if time.monotonic() > end:
                raise BenchError("drain: the first burst was not forwarded in 60 s: %s" % d)
            time.sleep(0.05)
        if args.perf:
            pf = perf_worker(b.pid, os.path.join(fab.tmp, "drain-%d.perf" % ng))
            time.sleep(0.5)
        fwd0 = d["fwd_pkts"]
        while len(mpps) < rounds and bursts <= 2 * rounds:
            b.send_signal(signal.SIGSTOP)
            wait_stopped(b, "the bridge")
            snd.send_signal(signal.SIGCONT)
            wait_stopped(snd, "mcsender")
            bursts += 1
            w = subprocess.run([os.path.join(fab.tools, "bench", "drainwatch")] + pin +
                               [args.roce, str(b.pid), str(fill)], env=fab.env,
                               capture_output=True, text=True, timeout=120)
            if w.returncode == 2:
                raise BenchError("drainwatch: %s" % w.stderr.strip())
            res = json.loads(w.stdout)
            if w.returncode == 0:
                mpps.append(res["mpps"])
            log("    burst %d: %d packets, %s" % (
                bursts - 1, res["pkts"],
                "%.3f Mpps" % res["mpps"] if w.returncode == 0 else
                "not timed (%d reads)" % res["reads"]))
        perf_end(pf)
        snd.send_signal(signal.SIGTERM)
        snd.send_signal(signal.SIGCONT)
        snd.wait(60)
        time.sleep(0.5)
        st1 = bridge_stats(fab, ctl)
    finally:
        perf_end(pf)
        # A stopped process answers no SIGINT (fab.stop): the sender is ended as above,
        # the bridge continued first.
        if snd and snd.poll() is None:
            snd.send_signal(signal.SIGTERM)
            snd.send_signal(signal.SIGCONT)
        if b.poll() is None:
            b.send_signal(signal.SIGCONT)
        fab.stop(b)
        if snd:
            fab.stop(snd)
        fab.cleanup()
    out = fab.text("drainsend")
    m = re.search(r'"sent"\s*:\s*(\d+)', out)
    if snd.returncode != 0 or not m:
        raise BenchError("drain: mcsender exited %s: %s %s" % (
            snd.returncode, out[-300:], fab.text("drainsend", "err")[-300:]))
    sent = int(m.group(1))
    if sent != fill * bursts:
        raise BenchError("drain: mcsender sent %d packets, not %d bursts of %d" % (
            sent, bursts, fill))
    d = side_delta(st0, st1, "IB")
    nic = d.get("nic_rx_dropped") or 0
    out = {"mpps": statistics.median(mpps) if mpps else None, "rounds": mpps,
           "untimed": bursts - 1 - len(mpps), "fill": fill, "sent": sent,
           "fwd": d["fwd_pkts"], "drops": d["drops"], "nic_drop": nic,
           "unaccounted": sent - d["rx_pkts"] - nic}
    if pf and d["fwd_pkts"] > fwd0:
        # ns of the worker's CPU a packet of the timed bursts, by symbol (the 12 largest):
        # the drains and the worker's spinning between them (polls of an empty queue,
        # worker_pass and below; none while it is stopped).
        ns = 1e9 / PERF_FREQ / (d["fwd_pkts"] - fwd0)
        syms = perf_symbols(os.path.join(fab.tmp, "drain-%d.perf" % ng))
        out["perf_ns"] = {k: round(v * ns, 2) for k, v in
                          sorted(syms.items(), key=lambda kv: -kv[1])[:12]}
    return out


def median_of(runs, k, default=None):
    """The median of the runs' values of k (those that have one), else default."""
    v = [r[k] for r in runs if r.get(k) is not None]
    return statistics.median(v) if v else default


def runs_by(runs, builds, key):
    """(build, value, that build's runs with that value) for each build and each value of
    key among the runs, in order; a pair without runs is left out."""
    for b in builds:
        for v in sorted({r[key] for r in runs}):
            rs = [r for r in runs if r[key] == v and r["build"] == b["label"]]
            if rs:
                yield b, v, rs


def cg_totals(path):
    """Every event of a callgrind file over all it collected (inside chan_burst, the
    simulated verbs included): {"Ir": n, "D1mr": n, ...}; with --cache-sim=yes the
    cache events too (HARNESS_CG_OPTS)."""
    events, totals = None, None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:") or line.startswith("totals:"):
                totals = [int(x) for x in line.split()[1:]]
    if not events or not totals:
        return {}
    return dict(zip(events, totals))


def cg_count(args, fab, bridge, sc, count, tag):
    """Engine instructions and forwarded packets of one callgrind run."""
    groups = group_addrs(sc["groups"])
    # One file per run (--keep keeps them all): cg.<scenario>.<source>-<build>.<a|b>, the
    # bridge's build folder and the one above it (a baseline's "build" is another tree's).
    name = next((k for k, v in SCENARIOS.items() if v is sc), "scenario")
    bdir = os.path.dirname(os.path.dirname(os.path.abspath(bridge)))
    cg_out = os.path.join(fab.tmp, "cg.%s.%s-%s.%s" % (
        name, os.path.basename(os.path.dirname(bdir)), os.path.basename(bdir), tag))
    fab.reset()
    try:
        b = start_bridge(fab, args, bridge, sc, groups, "cgbridge", cg_out)
        cmds = sender_cmds(args, fab, sc, groups, count, args.cg_rate, 3000000,
                           args.cg_warm_rate if sc.get("mcpkt_senders") else 0)
        if not sc.get("mcpkt_senders"):
            run_senders(fab, cmds, "cgsend")
        else:
            # The warm-up must reach the bridge whole (its NIC dropped none of it), or the
            # counted pass has first sightings of its own that the pair does not cancel:
            # the bridge's counters are read in the pause between the two passes.
            cmds = [c + ["--warmup-pause", "10000"] for c in cmds]
            out = {}
            t = threading.Thread(target=lambda: out.update(r=run_senders(fab, cmds, "cgsend")),
                                 daemon=True)
            t.start()
            end = time.monotonic() + 1800
            while not re.search(r"^mcpkt: warm sent=", fab.text("cgsend0"), re.M):
                if not t.is_alive() or time.monotonic() > end:
                    t.join(1)
                    raise BenchError("callgrind: mcpkt's warm-up did not end: %s" %
                                     fab.text("cgsend0", "err")[-400:])
                time.sleep(0.2)
            ib = side_delta(None, bridge_stats(fab, os.path.join(fab.tmp, "cgbridge.sock")),
                            "IB")
            t.join()
            if "r" not in out:
                raise BenchError("callgrind: the senders failed: %s" %
                                 fab.text("cgsend0", "err")[-400:])
            if ib.get("nic_rx_dropped"):
                raise BenchError("callgrind: the bridge's NIC dropped %d packets of the "
                                 "warm-up pass (--cg-warm-rate %d is more than the bridge under "
                                 "callgrind forwards)" % (ib["nic_rx_dropped"], args.cg_warm_rate))
        time.sleep(2)
        fab.stop(b, 300)
        fwd = bridge_counters(fab.text("cgbridge"))
        if fwd is None:
            raise BenchError("callgrind bridge: no final counters: %s" %
                             fab.text("cgbridge", "err")[-600:])
        if sc.get("mcpkt_senders"):
            # Both runs of a pair must have the same first sightings (every sender once,
            # in the warm-up pass) for the difference to cancel them.
            m = re.search(r"^senders=(\d+)", fab.text("cgbridge"), re.M)
            if not m or int(m.group(1)) != sc["mcpkt_senders"]:
                raise BenchError("callgrind bridge saw %s senders, not %d: the warm-up lost "
                                 "packets (--cg-warm-rate)" % (m.group(1) if m else "no",
                                                               sc["mcpkt_senders"]))
        r = subprocess.run(["awk", "-v", "obj=ib2roce", "-v", "sim=/simfabric/|libibverbs|librdmacm",
                            "-f", os.path.join(SRC, "bench", "cg_engine.awk"), cg_out],
                           capture_output=True, text=True, check=True)
        return int(r.stdout.strip()), fwd, cg_totals(cg_out)
    finally:
        fab.cleanup()
        for f in os.listdir(fab.tmp) if not args.keep else []:
            if f.startswith(os.path.basename(cg_out)):
                os.unlink(os.path.join(fab.tmp, f))


def cg_run(args, fab, bridge, sc, quick):
    n = 4000 if quick else args.cg_count
    if sc.get("mcpkt_senders"):
        n = args.cg_per_sender * sc["mcpkt_senders"]
    elif sc["groups"] * sc["streams"] > n // 10:
        n = 10 * sc["groups"] * sc["streams"]
    ia, fa, ta = cg_count(args, fab, bridge, sc, n, "a")
    ib, fb, tb = cg_count(args, fab, bridge, sc, 3 * n, "b")
    if fb <= fa:
        raise BenchError("callgrind: the second run forwarded no more packets (%d, %d)" % (fa, fb))
    # The difference cancels what both runs share (start-up, first sightings) only when
    # the second run forwarded clearly more: with 16 384 and 17 664 packets a few hundred
    # instructions of either run's set-up moved the result by a tenth.
    if 2 * fb < 3 * fa:
        raise BenchError("callgrind: the second run forwarded too few packets more than the "
                         "first (%d, %d; at least 1.5 times are needed): the bridge was not "
                         "saturated the same way in both (--cg-rate)" % (fa, fb))
    # Per packet, every event callgrind collected (all of chan_burst, the simulated NIC
    # included): with --cache-sim=yes, D1mr/D1mw/DLmr/DLmw are the simulated misses.
    per = {e: (tb[e] - ta[e]) / (fb - fa) for e in tb if e in ta}
    return {"ipp": (ib - ia) / (fb - fa), "ir": [ia, ib], "fwd": [fa, fb], "per_packet": per}


def summarize(vals):
    v = sorted(x for x in vals if x is not None)
    if not v:
        return None
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
    return {"median": statistics.median(v), "min": v[0], "max": v[-1], "q1": q[0],
            "q3": q[2], "n": len(v), "runs": vals}


METRICS = ["rate_pps", "rx_pps", "loss", "loss_below", "bridge_loss_below", "unaccounted",
           "p50", "p90", "p99", "p99.9", "ipp"]
TIMED_METRICS = METRICS[:-1]


def prepare_baseline(spec, tmpdir, buildtype):
    """A build directory for --baseline: a directory as is, or a commit built in a
    temporary git worktree."""
    if os.path.isdir(spec) and os.path.exists(os.path.join(spec, "build.ninja")):
        return os.path.abspath(spec), None
    r = subprocess.run(["git", "-C", SRC, "rev-parse", "--verify", spec + "^{commit}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError("--baseline %s: neither a build directory nor a commit" % spec)
    wt = os.path.join(tmpdir, "baseline-src")
    subprocess.run(["git", "-C", SRC, "worktree", "add", "--detach", wt, r.stdout.strip()],
                   check=True, capture_output=True)
    bd = os.path.join(wt, "build")
    log("harness: building baseline %s in %s" % (spec, bd))
    subprocess.run(["meson", "setup", "--buildtype", buildtype, bd, wt], check=True,
                   stdout=subprocess.DEVNULL)
    # The bridge is app/ib2roce since the layout of issue 27, control/ib2roce before.
    if subprocess.run(["nice", "ninja", "-C", bd, "app/ib2roce"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
        subprocess.run(["nice", "ninja", "-C", bd, "control/ib2roce"], check=True,
                       stdout=subprocess.DEVNULL)
    return bd, wt


def bcom_bin(bd):
    """bcom of build directory bd: tools/bcom, or control/bcom (before issue 27's layout)."""
    new = os.path.join(bd, "tools", "bcom")
    return new if os.access(new, os.X_OK) else os.path.join(bd, "control", "bcom")


def bridge_bin(bd):
    """The bridge of build directory bd: app/ib2roce, or control/ib2roce (older trees)."""
    new = os.path.join(bd, "app", "ib2roce")
    return new if os.access(new, os.X_OK) else os.path.join(bd, "control", "ib2roce")


def plots(outdir, results, builds, names):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [b["label"] for b in builds]
    width = 0.8 / len(labels)
    specs = [("rate.png", "Mpps: forwarded by the bridge (rate_pps), received (rx_pps)",
              [("rate_pps", 1e-6), ("rx_pps", 1e-6)]),
             ("latency.png", "one-way latency (us): p50, p90, p99",
              [("p50", 1), ("p90", 1), ("p99", 1)]),
             ("ipp.png", "engine instructions per forwarded packet", [("ipp", 1)])]
    for fname, title, metrics in specs:
        fig, ax = plt.subplots(figsize=(8, 4), dpi=80)
        xs = range(len(names))
        k = 0
        anyval = False
        nbars = len(labels) * len(metrics)
        w = 0.8 / nbars
        for bi, lab in enumerate(labels):
            for metric, scale in metrics:
                med, lo, hi = [], [], []
                for n in names:
                    s = results[n][lab].get(metric)
                    if s:
                        med.append(s["median"] * scale)
                        lo.append((s["median"] - s["min"]) * scale)
                        hi.append((s["max"] - s["median"]) * scale)
                    else:
                        med.append(0)
                        lo.append(0)
                        hi.append(0)
                pos = [x - 0.4 + w * (k + 0.5) for x in xs]
                bars = ax.bar(pos, med, w, yerr=[lo, hi], capsize=2,
                              label="%s %s" % (lab, metric) if len(metrics) > 1 or
                              len(labels) > 1 else metric)
                ax.bar_label(bars, labels=["%.3g" % m if m else "" for m in med],
                             fontsize=6, padding=1)
                k += 1
                anyval = anyval or any(med)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=20)
        ax.set_title(title + " (median, bars min-max)")
        if metrics[0][0] == "p50" and anyval:
            ax.set_yscale("log")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, fname))
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="scenarios: " + ", ".join(
                                     "%s (%s)" % (k, v["desc"]) for k, v in SCENARIOS.items()))
    ap.add_argument("-B", "--build", default="build", help="build directory (default build)")
    ap.add_argument("--baseline", help="build directory or git commit to compare with")
    ap.add_argument("-n", "--runs", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 1 repetition, few packets, scenarios single,pgm")
    ap.add_argument("-s", "--scenarios", help="comma-separated names (default all)")
    ap.add_argument("--no-timed", action="store_true", help="callgrind only")
    ap.add_argument("--no-callgrind", action="store_true", help="timed runs only")
    ap.add_argument("-o", "--outdir", help="result directory")
    ap.add_argument("--count", type=int, default=1000000,
                    help="packets of a rate phase (default 1 000 000)")
    ap.add_argument("--scaling-count", type=int, default=2000000,
                    help="packets per sender process of workersN (default 2 000 000)")
    ap.add_argument("--drain-rounds", type=int, default=9,
                    help="drain: bursts timed per run, the run's figure their median "
                    "(default 9)")
    ap.add_argument("--lat-count", type=int, default=5000, help="packets of a latency phase")
    ap.add_argument("--lat-rate", type=int, default=10000, help="pps of a latency phase")
    ap.add_argument("--cg-rate", type=int, default=2000000,
                    help="pps offered under callgrind (default 2 000 000: more than the bridge "
                    "under callgrind forwards, so that it sees full bursts)")
    ap.add_argument("--below", type=float, default=0.5,
                    help="the below-capacity phase offers this fraction of the rate just "
                    "measured (default 0.5; 0: no such phase)")
    ap.add_argument("--below-count", type=int, default=200000,
                    help="packets of the below-capacity phase (default 200 000)")
    ap.add_argument("--warm-rate", type=int, default=100000,
                    help="pps of the warm-up pass of senders100k in timed runs (each sender "
                    "once before the counted pass; default 100 000)")
    ap.add_argument("--cg-warm-rate", type=int, default=2500,
                    help="pps of senders100k's warm-up pass under callgrind (every one of "
                    "its packets must be forwarded: the pair's first sightings then cancel; "
                    "default 2 500)")
    ap.add_argument("--cg-per-sender", type=int, default=4,
                    help="senders100k under callgrind: packets per sender of the first run "
                    "(the second: 3 times as many; default 4)")
    ap.add_argument("--cg-count", type=int, default=100000,
                    help="packets of the first callgrind run of a pair, the second 3 times as "
                    "many (default 100 000; at least 10 per stream; not senders100k): the "
                    "receive queue's 16 384 buffered packets must be a small part of both")
    ap.add_argument("--cg-runs", type=int, default=2,
                    help="repetitions of the callgrind measurement (default 2)")
    ap.add_argument("-d", "--ib", default=None, help="bridge's InfiniBand device (real)")
    ap.add_argument("-r", "--roce", default=None, help="bridge's RoCE device (real)")
    ap.add_argument("--send-dev", default="sim_ib1", help="IB device of the senders")
    ap.add_argument("--listen-dev", default="sim_roce2", help="RoCE device of the listener")
    ap.add_argument("--direct-dev", default="sim_ib2",
                    help="IB device of the listener of the direct path")
    ap.add_argument("--mcpkt-addr", default="198.18.0.2", help="IPv4 of --send-dev (mcpkt)")
    ap.add_argument("--perf", action="store_true",
                    help="ceiling, drain: record the worker with perf (linux-perf) and print "
                    "its time a packet (ceiling: in the engine; drain: by symbol)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the processes' output (a temporary directory)")
    args = ap.parse_args()

    args.real = bool(args.ib or args.roce)
    if args.real and not (args.ib and args.roce):
        ap.error("-d and -r go together")
    args.ib = args.ib or "sim_ib0"
    args.roce = args.roce or "sim_roce0"
    args.send_roce = False
    if args.runs < 1:
        ap.error("-n needs a positive number")
    names = args.scenarios.split(",") if args.scenarios else (
        QUICK_DEFAULT if args.quick else list(SCENARIOS))
    for n in names:
        if n not in SCENARIOS:
            ap.error("unknown scenario '%s' (known: %s)" % (n, ", ".join(SCENARIOS)))
    runs = 1 if args.quick else args.runs
    build = os.path.abspath(args.build)
    for f in ("app/ib2roce", "tools/mcsender", "tools/mclisten", "simfabric/simfab",
              "bench/drainwatch"):
        if not os.access(os.path.join(build, f), os.X_OK):
            ap.error("build first: missing %s/%s" % (build, f))
    # What the harness needs, checked before anything runs (a missing plotting library
    # used to fail after all the measurements).
    try:
        import matplotlib  # noqa: F401 (plots())
    except ImportError:
        ap.error("python3-matplotlib missing: the plots need it (scripts/install-deps.sh)")
    if not args.no_callgrind and not shutil.which("valgrind"):
        ap.error("valgrind missing: callgrind measures the instructions per packet "
                 "(scripts/install-deps.sh, or --no-callgrind)")

    tmp = tempfile.mkdtemp(prefix="harness.")
    wt = None
    fab = Fabric(args, build, tmp)

    def on_term(sig, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        binfo = build_info(build)
        builds = [dict(label="new", bridge=bridge_bin(build), **binfo)]
        if args.baseline:
            bd, wt = prepare_baseline(args.baseline, tmp, binfo.get("buildtype", "debugoptimized"))
            bi = build_info(bd)
            builds.insert(0, dict(label="old", bridge=bridge_bin(bd),
                                  **bi))
        outdir = args.outdir or os.path.join(
            SRC, "bench", "results", "harness-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
        os.makedirs(outdir, exist_ok=True)

        raw = {n: {b["label"]: {m: [] for m in METRICS} for b in builds} for n in names}
        steps = []
        for rep in range(runs):
            for n in names:
                for b in builds:
                    if args.no_timed:
                        continue
                    if SCENARIOS[n].get("ceiling"):
                        for g in SCENARIOS[n]["ceiling"]:
                            steps.append(("ceiling", rep, n, b, g))
                        continue
                    if SCENARIOS[n].get("drain"):
                        for g in SCENARIOS[n]["drain"]:
                            steps.append(("drain", rep, n, b, g))
                        continue
                    for w in SCENARIOS[n].get("scaling", [None]):
                        steps.append(("scaling" if w else "timed", rep, n, b, w))
        for rep in range(1 if args.quick else args.cg_runs):
            for n in names:
                if SCENARIOS[n].get("direct") or SCENARIOS[n].get("scaling") or \
                        SCENARIOS[n].get("ceiling") or SCENARIOS[n].get("drain"):
                    continue
                for b in builds:
                    if not args.no_callgrind:
                        steps.append(("callgrind", rep, n, b, None))
        errors = []
        cg_detail = []
        acc_detail = []
        t0 = time.monotonic()
        scaling = []
        ceiling = []
        drain = []
        for i, (kind, rep, n, b, nw) in enumerate(steps):
            sc = SCENARIOS[n]
            el = time.monotonic() - t0
            log("[%d/%d %4.0fs] %s %s%s %s run %d" % (
                i + 1, len(steps), el, kind, n,
                (" G=%d" if kind in ("ceiling", "drain") else " W=%d") % nw if nw else "", b["label"],
                rep + 1))
            try:
                if kind == "ceiling":
                    r = ceiling_run(args, fab, b["bridge"], sc, nw, args.quick)
                    r.update({"groups": nw, "build": b["label"], "run": rep + 1})
                    ceiling.append(r)
                    log("    %d groups: offered %.3f Mpps, forwarded %.3f, drops %d, NIC %d, "
                        "unaccounted %d%s" % (
                            nw, r["offered_mpps"] or 0, r["fwd_mpps"] or 0, r["drops"],
                            r["nic_drop"], r["unaccounted"],
                            "; engine %.3f us a packet" % r["engine_us"]
                            if "engine_us" in r else ""))
                elif kind == "drain":
                    r = drain_run(args, fab, b["bridge"], sc, nw, args.quick)
                    r.update({"groups": nw, "build": b["label"], "run": rep + 1})
                    drain.append(r)
                    log("    %d groups: %s Mpps (median of %d bursts of %d, %d not timed), "
                        "drops %d, NIC %d, unaccounted %d" % (
                            nw, "%.3f" % r["mpps"] if r["mpps"] else "-", len(r["rounds"]),
                            r["fill"], r["untimed"], r["drops"], r["nic_drop"],
                            r["unaccounted"]))
                    if r.get("perf_ns"):
                        log("    worker ns a packet: %s" % ", ".join(
                            "%s %.1f" % kv for kv in r["perf_ns"].items()))
                elif kind == "scaling":
                    r = scaling_run(args, fab, b["bridge"], sc, nw, args.quick)
                    r.update({"workers": nw, "build": b["label"], "run": rep + 1})
                    scaling.append(r)
                    log("    %d senders: fabric alone %.3f Mpps; into %d workers offered %.3f, "
                        "forwarded %.3f Mpps, drops %d, NIC %d, unaccounted %d" % (
                            nw, r["fabric_mpps"] or 0, nw, r["offered_mpps"] or 0,
                            r["fwd_mpps"] or 0, r["drops"], r["nic_drop"], r["unaccounted"]))
                elif kind == "timed":
                    r = timed_run(args, fab, b["bridge"], sc, args.quick)
                    for m in TIMED_METRICS:
                        raw[n][b["label"]][m].append(r.get(m))
                    acc_detail.append({"scenario": n, "build": b["label"], "run": rep + 1,
                                       "phases": r["accounting"]})
                    lat = r.get("p50")
                    log("    %s Mpps forwarded, %s received, loss %.1f%% (%s), below capacity %s "
                        "(%s), latency p50 %s us" % (
                        "%.3f" % (r["rate_pps"] / 1e6) if r["rate_pps"] is not None else "-",
                        "%.3f" % (r["rx_pps"] / 1e6) if r["rx_pps"] is not None else "-",
                        100 * (r["loss"] or 0), where(r["accounting"]["rate"]),
                        "%.2f%% lost" % (100 * r["loss_below"]) if r.get("loss_below")
                        is not None else "-",
                        where(r["accounting"]["below"]) if "below" in r["accounting"] else "-",
                        "%.1f" % lat if lat is not None else "-"))
                    if r["unaccounted"]:
                        log("    UNACCOUNTED: %d packets lost where no counter names them: %s" %
                            (r["unaccounted"], json.dumps(r["accounting"])))
                else:
                    r = cg_run(args, fab, b["bridge"], sc, args.quick)
                    raw[n][b["label"]]["ipp"].append(r["ipp"])
                    cg_detail.append({"scenario": n, "build": b["label"], "run": rep + 1,
                                      "ir": r["ir"], "forwarded": r["fwd"],
                                      "per_packet": r["per_packet"]})
                    log("    %.0f instructions per forwarded packet (%s packets)" % (
                        r["ipp"], r["fwd"]))
                    if "D1mr" in r["per_packet"]:
                        log("    per packet, all of chan_burst: %s" % " ".join(
                            "%s %.2f" % (e, v) for e, v in r["per_packet"].items()))
                if kind in ("ceiling", "scaling", "drain") and r["unaccounted"]:
                    errors.append({"step": kind, "scenario": n, "build": b["label"],
                                   "run": rep + 1, "error": "%d unaccounted" % r["unaccounted"]})
            except BenchError as e:
                log("    failed: %s" % e)
                errors.append({"step": kind, "scenario": n, "build": b["label"], "run": rep + 1,
                               "error": str(e)})

        results = {n: {b["label"]: {m: summarize(raw[n][b["label"]][m]) for m in METRICS}
                       for b in builds} for n in names}
        doc = {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": " ".join([os.path.relpath(sys.argv[0], SRC)] + sys.argv[1:]),
            "machine": machine_info(),
            "builds": [{k: v for k, v in b.items()} for b in builds],
            "runs": runs,
            "scenarios": {n: SCENARIOS[n] for n in names},
            "results": results,
            "errors": errors,
            "callgrind_runs": cg_detail,
            "accounting": acc_detail,
            "workers_scaling": scaling,
            "ceiling": ceiling,
            "drain": drain,
        }
        if len(builds) == 2:
            doc["ratios_new_over_old"] = {
                n: {m: (results[n]["new"][m]["median"] / results[n]["old"][m]["median"]
                        if results[n]["new"][m] and results[n]["old"][m]
                        and results[n]["old"][m]["median"] else None) for m in METRICS}
                for n in names}
        with open(os.path.join(outdir, "results.json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        with open(os.path.join(outdir, "results.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["scenario", "build", "commit", "buildtype", "compiler", "cpu", "kernel",
                        "metric", "median", "min", "max", "q1", "q3", "n"])
            for n in names:
                for b in builds:
                    for m in METRICS:
                        s = results[n][b["label"]][m]
                        if s:
                            w.writerow([n, b["label"], b["commit"], b.get("buildtype"),
                                        b["compiler"], doc["machine"]["cpu"],
                                        doc["machine"]["kernel"], m] +
                                       ["%.6g" % s[k] for k in ("median", "min", "max", "q1",
                                                                "q3")] + [s["n"]])
        plots(outdir, results, builds, names)

        # The table.
        print("%-12s %-4s %9s %8s %7s %7s %6s %7s %7s %9s  %s" % (
            "scenario", "", "fwd Mpps", "rx Mpps", "loss%", "<cap%", "unacc", "p50 us", "p99 us",
            "instr/pkt", "fwd min-max"))
        for n in names:
            for b in builds:
                s = results[n][b["label"]]

                def f(m, scale=1.0, fmt="%.2f"):
                    return (fmt % (s[m]["median"] * scale)) if s[m] else "-"

                spread = ("[%.2f-%.2f]" % (s["rate_pps"]["min"] / 1e6, s["rate_pps"]["max"] / 1e6)
                          if s["rate_pps"] else "")
                unacc = ("%d" % sum(s["unaccounted"]["runs"]) if s["unaccounted"] else "-")
                print("%-12s %-4s %9s %8s %7s %7s %6s %7s %7s %9s  %s" % (
                    n, b["label"], f("rate_pps", 1e-6, "%.3f"), f("rx_pps", 1e-6, "%.3f"),
                    f("loss", 100, "%.1f"),
                    f("bridge_loss_below", 100, "%.2f"), unacc,
                    f("p50", 1, "%.1f"), f("p99", 1, "%.1f"), f("ipp", 1, "%.0f"), spread))
            if len(builds) == 2:
                r = doc["ratios_new_over_old"][n]
                print("%-12s %-4s %9s %8s %7s %7s %6s %7s %7s %9s" % (
                    "", "new/old", *["%.3f" % r[m] if r[m] else "-"
                                     for m in ("rate_pps", "rx_pps", "loss", "bridge_loss_below")],
                    "",
                    *["%.3f" % r[m] if r[m] else "-" for m in ("p50", "p99", "ipp")]))
        if scaling:
            print("\nworkersN: W senders (one per IB device) alone, then into W workers "
                  "(median of the runs, Mpps; unaccounted summed, must be 0):")
            print("  %-4s %2s %12s %12s %12s %8s %10s %6s" % (
                "", "W", "fabric", "offered", "forwarded", "drops", "NIC drops", "unacc"))
            for b, nw, rs in runs_by(scaling, builds, "workers"):
                print("  %-4s %2d %12.3f %12.3f %12.3f %8d %10d %6d" % (
                    b["label"], nw, median_of(rs, "fabric_mpps", 0),
                    median_of(rs, "offered_mpps", 0), median_of(rs, "fwd_mpps", 0),
                    sum(r["drops"] for r in rs), sum(r["nic_drop"] for r in rs),
                    sum(r["unaccounted"] for r in rs)))
        if ceiling:
            print("\nceiling: one sender into one worker, no listener (median of the runs; "
                  "kept: forwarded over offered, below 1 where the bridge is the limit; fwd/1: "
                  "the forwarded rate over one group's, same build, the sender's limit where "
                  "kept is 1; engine: us of the worker's CPU a forwarded packet in chan_burst "
                  "and wside_poll_mixed, with --perf):")
            print("  %-4s %6s %9s %9s %6s %6s %8s %10s %6s %7s" % (
                "", "groups", "offered", "fwd Mpps", "kept", "fwd/1", "drops", "NIC drops",
                "unacc", "engine"))
            one = {}
            for b, ng, rs in runs_by(ceiling, builds, "groups"):
                fwd, eng = median_of(rs, "fwd_mpps"), median_of(rs, "engine_us")
                if ng == 1:
                    one[b["label"]] = fwd
                base = one.get(b["label"])
                print("  %-4s %6d %9.3f %9.3f %6.3f %6s %8d %10d %6d %7s" % (
                    b["label"], ng, median_of(rs, "offered_mpps", 0), fwd or 0,
                    median_of(rs, "kept", 0), "%.3f" % (fwd / base) if fwd and base else "-",
                    sum(r["drops"] for r in rs), sum(r["nic_drop"] for r in rs),
                    sum(r["unaccounted"] for r in rs), "%.3f" % eng if eng is not None else "-"))
        if drain:
            print("\ndrain: one worker empties a receive queue filled while it was stopped, "
                  "no listener (Mpps: median over the runs of each run's median burst; "
                  "fwd/1: over one group's, same build; drops, NIC drops, unacc: summed, unacc "
                  "must be 0):")
            print("  %-4s %6s %9s %17s %6s %8s %10s %6s" % (
                "", "groups", "fwd Mpps", "runs min-max", "fwd/1", "drops", "NIC drops",
                "unacc"))
            one = {}
            for b, ng, rs in runs_by(drain, builds, "groups"):
                fwd = median_of(rs, "mpps")
                if ng == 1:
                    one[b["label"]] = fwd
                base = one.get(b["label"])
                v = [r["mpps"] for r in rs if r.get("mpps")]
                print("  %-4s %6d %9.3f %17s %6s %8d %10d %6d" % (
                    b["label"], ng, fwd or 0,
                    "%.3f-%.3f" % (min(v), max(v)) if v else "-",
                    "%.3f" % (fwd / base) if fwd and base else "-",
                    sum(r["drops"] for r in rs), sum(r["nic_drop"] for r in rs),
                    sum(r["unaccounted"] for r in rs)))
        # Where the packets went: every phase of every run, summed per scenario and build.
        if acc_detail:
            print("\nwhere the offered packets went (all timed runs; loss%%: lost anywhere at "
                  "saturation; <cap%%: lost in the bridge (its NIC or a drop reason) at %g of "
                  "the measured rate; unacc: lost where no counter names them, must be 0):"
                  % args.below)
            for n in names:
                for b in builds:
                    for ph, t in accounting_totals(acc_detail, n, b["label"]).items():
                        print("  %-12s %-4s %-8s offered %9d  listener %9d  %s" % (
                            n, b["label"], ph, t["wire"], t["listener"], where(t)))
        print("results: %s (%s runs, %s)" % (outdir, runs, binfo["commit"]))
        if errors:
            print("%d step(s) failed: see errors in results.json" % len(errors))
            return 1
        return 0
    except KeyboardInterrupt:
        log("harness: interrupted")
        return 130
    except (BenchError, subprocess.CalledProcessError) as e:
        log("harness: %s" % e)
        return 1
    finally:
        fab.cleanup()
        if wt:
            subprocess.run(["git", "-C", SRC, "worktree", "remove", "--force", wt],
                           capture_output=True)
        if args.keep:
            log("harness: kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
