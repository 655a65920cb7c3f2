#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A seeded fuzzer of rnull, compared with null_blk. Runs inside the test VM.

Random sequences of what users do to the two drivers: modprobe and rmmod
(with valid and hostile parameters), mkdir and rmdir under configfs, valid
and hostile attribute writes, power on and off, live changes of the queue
counts, fio on the powered devices (verified with crc32c on memory-backed
ones, also after power cycles). Every operation is done to a pair of
devices, one of each driver, set up alike, and the outcomes (errnos, the
attributes read back, the shape of the disks) must be the same, except for
the differences Documentation/rnull.rst lists, which the fuzzer knows. A fio
job on a device that stayed powered must end without an error, and data
verified once must read back the same after power cycles.

The sequence of operations depends on the seed only: a failure is replayed
with RNULL_FUZZ_SEED=<seed> (printed first) and RNULL_FUZZ_OPS=<count>.
RNULL_FUZZ_SECONDS stops earlier. RNULL_FUZZ_TRACE=1 writes each operation
to the console before it runs, for crashes that take the VM down. The kernel log is checked as the run goes:
a warning fails the run at the operation that caused it.
"""

import errno
import os
import random
import re
import stat
import subprocess
import sys
import threading
import time

RCFG = "/sys/kernel/config/rnull"
# The drivers' modules, loaded and removed with busybox's static insmod and
# rmmod: kmod's modprobe takes a tenth of a second to start in the VM.
DRIVER_DIR = f"/lib/modules/{os.uname().release}/kernel/drivers/block"
DRIVER_FILE = {"rnull": f"{DRIVER_DIR}/rnull/rnull.ko",
               "null_blk": f"{DRIVER_DIR}/null_blk/null_blk.ko"}
CCFG = "/sys/kernel/config/nullb"
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
ONLINE_NODES = len([d for d in os.listdir("/sys/devices/system/node") if re.fullmatch(r"node\d+", d)])
CPUS = os.cpu_count()
TRACE = os.environ.get("RNULL_FUZZ_TRACE") == "1"

# The attributes both drivers have, by type.
BOOL = ["badblocks_once", "badblocks_partial_io", "blocking", "discard", "fua",
        "memory_backed", "no_sched", "rotational", "shared_tag_bitmap", "shared_tags",
        "use_per_node_hctx", "virt_boundary", "zone_full", "zoned"]
UINT = ["blocksize", "home_node", "hw_queue_depth", "irqmode", "max_sectors", "mbps",
        "poll_queues", "queue_mode", "submit_queues", "zone_append_max_sectors",
        "zone_max_active", "zone_max_open", "zone_nr_conv"]
ULONG = ["cache_size", "completion_nsec", "size", "zone_capacity", "zone_size"]
# Write-only: the zone holding the sector written becomes read-only or
# offline (or empty again).
ZONE_CONDITIONS = ["zone_offline", "zone_readonly"]
# The bad sectors: requests touching them fail, on both drivers alike.
BAD_BLOCKS = ["badblocks"]
LIVE = ["submit_queues", "poll_queues"]
ATTRS = sorted(BOOL + UINT + ULONG)

# Values a user might write, valid ones first. Values that would make I/O
# hang for minutes (a timer completion far beyond the timeout) are left out:
# both drivers would wait for them, by design.
GOOD = {
    "blocksize": ["512", "4096", "1024", "0", str(PAGE_SIZE * 2), "65536"],
    "home_node": ["0", str(ONLINE_NODES - 1), "4294967295"],
    "hw_queue_depth": ["1", "2", "16", "64", "256"],
    "irqmode": ["0", "1", "2"],
    "max_sectors": ["0", "8", "128", "1024"],
    # Limits of at least 64 MiB/s: null_blk hangs on a request larger than
    # its budget of a tick (20 ms), and requests here are at most 1.25 MiB.
    "mbps": ["0", "0", "64", "100", "40960"],
    "poll_queues": ["0", "1", "2"],
    "queue_mode": ["2", "0"],
    "submit_queues": ["1", "2", str(CPUS)],
    "cache_size": ["0", "1", "4", "16"],
    "completion_nsec": ["0", "1000", "10000", "200000"],
    "size": ["16", "64", "128"],
    "zone_size": ["1", "2", "4"],
    "zone_capacity": ["0", "1", "2"],
    "zone_nr_conv": ["0", "1", "3"],
    "zone_max_open": ["0", "1", "2", "4"],
    "zone_max_active": ["0", "2", "3", "6"],
    "zone_append_max_sectors": ["0", "8", "256", "2147483647"],
    "zone_offline": ["0", "2048", "4096", "8192"],
    "zone_readonly": ["0", "2048", "4096", "8192"],
    "badblocks": ["+0-7", "+2048-2055", "+4096-4351", "+100-100", "-0-7", "-0-100000",
                  "+8-8\n", " -2048-2055 "],
}
HOSTILE = ["", "\n", " ", "-1", "abc", "0x", "0x10", "010", "09", "+5", "5 ", "7\n",
           "7\n\n", "18446744073709551615", "18446744073709551616", "4294967296",
           "yes", "on", "1" * 300, "\x00", "\xff\xfe"]
# Instead of HOSTILE, for attributes some of whose hostile values would hang
# null_blk: for mbps, only values that do not parse or parse as a limit too
# large for that.
HOSTILE_FOR = {
    "mbps": ["", "-1", "abc", "0x", "4294967296", "yes", "1" * 300, "0x4000", "4294967295"],
    # Not 2^64 - 1: a timer completion of centuries on rnull, held past the
    # timeout like any later than it (null_blk wraps it to no delay at all;
    # Documentation/rnull.rst, "Differences from null_blk"). Nor 2^32: every
    # request of the disk would take 4.3 s on both drivers, its partition
    # scan at power-on too, which nothing here can tell from a shorter
    # delay (t20's bad input test writes and reads back that value).
    "completion_nsec": [v for v in HOSTILE if v not in ("18446744073709551615", "4294967296")],
}
# Hostile values that parse, and what they would do on null_blk.
RISKY = {
    "home_node": ["7", "255"],       # not online: null_blk oopses at power-on
    "max_sectors": ["1", "7"],      # below a page: null_blk warns at power-on
    "queue_mode": ["1", "3", "99"],
    "irqmode": ["3", "4294967295"],
    "submit_queues": ["0", "64", "4294967295"],
    "poll_queues": ["5", "4294967295"],
    "hw_queue_depth": ["0", "20000"],
    "blocksize": ["1", "1000", "131072", "4294967295"],
    "size": ["0", "17592186044416", "18446744073709551615"],
    "cache_size": ["17592186044416", "18446744073709551615"],
    "zone_size": ["0", "3", "256"],
    "zone_offline": ["99999999"],
    "zone_readonly": ["99999999"],
}


# What makes a kernel log line part of a report (shared with tests/run.sh).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "log-bad.ere")) as f:
    BAD_LOG = re.compile("|".join(l.strip() for l in f if l.strip()))


class Failure(Exception):
    """A difference from null_blk, or a broken promise of rnull."""


def log(msg):
    print(msg, flush=True)


def progress(msg):
    """Logs MSG, and shows it on the console at once where there is one:
    the tests' output is shown when they end, and a hang that panics the
    guest must still show the seed."""
    log(msg)
    try:
        with open("/dev/console", "w") as console:
            console.write(msg + "\n")
    except OSError:
        pass


def write(path, value):
    """Writes VALUE in one write(2); returns 0 or the errno."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return e.errno
    try:
        os.write(fd, value.encode("latin-1"))
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return "errno:" + errno.errorcode.get(e.errno, str(e.errno))


def run(*cmd):
    """Runs CMD; returns its exit status and output."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def insmod(module, args):
    """Loads MODULE with ARGS; returns the exit status."""
    return run("busybox", "insmod", DRIVER_FILE[module], *args)[0]


def rmmod(module):
    """Removes MODULE if it is loaded; returns the exit status."""
    if not os.path.isdir(f"/sys/module/{module}"):
        return 1
    return run("busybox", "rmmod", module)[0]


def errno_of(call, path):
    """Calls CALL(PATH); returns 0 or the errno it failed with."""
    try:
        call(path)
        return 0
    except OSError as e:
        return e.errno


def mkdir(path):
    return errno_of(os.mkdir, path)


def rmdir(path):
    return errno_of(os.rmdir, path)


def ename(e):
    return errno.errorcode.get(e, str(e)) if e else "0"


class Job:
    """A fio job running on one side of a pair."""

    def __init__(self, pair, side, args, verify, epoch):
        self.pair, self.side, self.args, self.verify, self.epoch = pair, side, args, verify, epoch
        self.proc = subprocess.Popen(["fio", "--output-format=terse"] + args,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Side:
    """One device of a pair: rnull's or null_blk's."""

    def __init__(self, cfg, name):
        self.dir = f"{cfg}/{name}"
        self.name = name
        self.exists = False
        self.powered = False
        # A verified write job whose data the device must still hold.
        self.written = None
        # Powered on with mbps set since it was made: null_blk's device keeps
        # its throttle flag from then on (see c_hazard).
        self.throttled = False

    def attr(self, a):
        return read(f"{self.dir}/{a}")


class Pair:
    def __init__(self, n):
        self.r = Side(RCFG, f"rf{n}")
        self.c = Side(CCFG, f"cf{n}")
        # Bumped whenever the devices' data may go (power off, rmdir): a fio
        # job that saw a change of epoch may fail, any other must not.
        self.epoch = 0
        # null_blk is left off while the settings would crash or corrupt it.
        self.c_skipped = False
        # The tag set of the devices was made without poll queues: it has one
        # queue map, on which blk-mq makes no more queues than CPUs.
        self.one_map = False
        # A zone was made read-only or offline (or empty again) since the
        # last power-on: I/O may fail on both drivers alike.
        self.zones_changed = False
        # Sectors were made bad since the devices were made: I/O may fail on
        # both drivers alike, also after power cycles.
        self.bad_blocks = False

    def sides(self):
        return [self.r] if self.c_skipped else [self.r, self.c]


class Fuzzer:
    def __init__(self, seed, ops, seconds):
        self.rng = random.Random(seed)
        self.seed, self.ops, self.seconds = seed, ops, seconds
        self.loaded = False
        self.params = {}
        self.pairs = [Pair(n) for n in range(4)]
        self.jobs = []
        self.history = []
        self.op = 0
        self.log_mark = self.dmesg_lines()
        self.stats = {}
        self.busy_since = None
        self.indexes_differ = False

    # ---- the kernel log ----
    def dmesg_lines(self):
        return len(run("dmesg")[1].splitlines())

    def check_log(self):
        lines = run("dmesg")[1].splitlines()
        new, self.log_mark = lines[self.log_mark:], len(lines)
        bad = [l for l in new if BAD_LOG.search(l)]
        if bad:
            raise Failure("kernel log:\n" + "\n".join(new[-60:]))

    # ---- expectations ----
    def expect_same(self, what, r, c):
        if r != c:
            raise Failure(f"{what}: rnull {r}, null_blk {c}")

    def expect(self, what, got, want):
        if got != want:
            raise Failure(f"{what}: expected {want}, got {got}")

    # ---- operations ----
    def note(self, text):
        self.history.append(f"{self.op}: {text}")
        self.history = self.history[-2000:]
        if TRACE:
            # On the console before the operation runs (the guest's kernel
            # log level keeps its own messages off it): a crash that takes
            # the VM down shows what led to it.
            try:
                with open("/dev/console", "w") as console:
                    console.write(f"fuzz: {self.op}: {text}\n")
            except OSError:
                pass

    def op_load(self):
        if self.loaded:
            return self.op_unload()
        params = {"nr_devices": "0"}
        for name, values in [("poll_queues", ["0", "1", "2"]),
                             ("submit_queues", ["1", "2"]),
                             ("hw_queue_depth", ["16", "64"]),
                             ("memory_backed", ["0", "1"]),
                             ("blocking", ["0", "1"]),
                             ("shared_tags", ["0", "1"]),
                             ("irqmode", ["0", "1", "2"]),
                             ("completion_nsec", ["10000", "100000"]),
                             ("cache_size", ["0", "8"]),
                             ("mbps", ["0", "64"]),
                             ("bs", ["512", "4096"])]:
            if self.rng.random() < 0.4:
                params[name] = self.rng.choice(values)
        hostile = None
        if self.rng.random() < 0.15:
            # Garbage both must refuse the same way.
            hostile = self.rng.choice(["irqmode=x", "gb=abc", "bs=1x", "nr_devices=-",
                                       "submit_queues=0x", "hw_queue_depth=99999999999",
                                       "queue_mode=1", "irqmode=7", "queue_mode=3"])
        args = [f"{k}={v}" for k, v in params.items()] + ([hostile] if hostile else [])
        self.note(f"modprobe {' '.join(args)}")
        r = insmod("rnull", args)
        c = insmod("null_blk", args)
        self.expect_same(f"modprobe {' '.join(args)}", r, c)
        self.loaded = r == 0
        if not self.loaded and c == 0:
            rmmod("null_blk")
        self.params = params

    def op_unload(self):
        self.reap(wait=True)
        self.note("rmmod")
        r = rmmod("rnull")
        c = rmmod("null_blk")
        busy = any(s.exists for p in self.pairs for s in (p.r, p.c))
        if busy:
            # configfs pins the modules: both refuse while devices exist.
            self.expect("rmmod rnull with devices", r != 0, True)
            self.expect("rmmod null_blk with devices", c != 0, True)
        else:
            self.expect_same("rmmod", r, c)
            self.loaded = False

    def op_mkdir(self, pair):
        if not self.loaded:
            return
        self.note(f"mkdir {pair.r.name} {pair.c.name}")
        r, c = mkdir(pair.r.dir), mkdir(pair.c.dir)
        self.expect_same(f"mkdir {pair.r.name}", ename(r), ename(c))
        if r == 0:
            pair.r.exists = pair.c.exists = True
            pair.c_skipped = False
            pair.bad_blocks = False
            pair.r.written = pair.c.written = None
            pair.r.throttled = pair.c.throttled = False

    def op_rmdir(self, pair):
        if not pair.r.exists:
            return
        self.note(f"rmdir {pair.r.name} {pair.c.name}")
        pair.epoch += 1
        r = rmdir(pair.r.dir)
        c = rmdir(pair.c.dir) if pair.c.exists else 0
        self.expect_same(f"rmdir {pair.r.name}", ename(r), ename(c))
        for s in (pair.r, pair.c):
            s.exists = s.powered = False
            s.written = None
        pair.c_skipped = False

    def value_for(self, attr):
        roll = self.rng.random()
        if roll < 0.15:
            return self.rng.choice(HOSTILE_FOR.get(attr, HOSTILE))
        if roll < 0.25 and attr in RISKY:
            return self.rng.choice(RISKY[attr])
        if attr in BOOL:
            return self.rng.choice(["0", "1", "y", "n", "on", "off", "1\n"])
        return self.rng.choice(GOOD[attr])

    def op_write(self, pair):
        if not pair.r.exists:
            return
        attr = self.rng.choice(ATTRS + ZONE_CONDITIONS + BAD_BLOCKS)
        value = self.value_for(attr)
        self.note(f"write {attr}={value[:20]!r} to {pair.r.name}")
        r = write(f"{pair.r.dir}/{attr}", value)
        if attr in ZONE_CONDITIONS and r == 0:
            # I/O may fail from now on, on both drivers alike, and data is
            # gone (a zone made empty again).
            pair.epoch += 1
            pair.zones_changed = True
            pair.r.written = pair.c.written = None
        if attr in BAD_BLOCKS and r == 0:
            # Running jobs may fail from now on too.
            pair.epoch += 1
            pair.bad_blocks = True
            pair.r.written = pair.c.written = None
        if attr == "poll_queues" and r == 0 and pair.r.powered:
            # A disk left without poll queues refuses polled I/O: the block
            # layer fails it with EOPNOTSUPP, on both drivers (found with
            # seed 2273252121). Its running polled jobs may fail.
            for job in self.jobs:
                if job.pair is pair and "--hipri" in job.args:
                    job.epoch = None
        if pair.c_skipped:
            # Only rnull's device is on: nothing to compare with. What rnull
            # took (a live queue count) goes to null_blk's too, so that the
            # two agree again once rnull's is off.
            if r == 0:
                write(f"{pair.c.dir}/{attr}", value)
            return
        if self.poll_without_map(pair, attr, value):
            # rnull refuses poll queues that its tag set has no map for;
            # null_blk takes the count and never polls them.
            if ename(r) != "EINVAL":
                raise Failure(f"write {attr}={value!r} to a disk made without poll queues: "
                              f"rnull {ename(r)}, expected EINVAL")
            return
        if self.c_cuts_queues(pair, attr, value):
            # blk-mq would make fewer queues than asked: null_blk warns from
            # its map_queues and keeps queues its settings do not show.
            if ename(r) != "EINVAL":
                raise Failure(f"write {attr}={value!r} beyond the CPUs on one queue map: "
                              f"rnull {ename(r)}, expected EINVAL")
            return
        c = write(f"{pair.c.dir}/{attr}", value)
        self.expect_same(f"write {attr}={value[:20]!r} (powered {pair.r.powered})",
                         ename(r), ename(c))
        if attr not in BAD_BLOCKS or pair.r.attr("badblocks_once") != "1":
            # (With badblocks_once, running jobs clear ranges at their pace.)
            self.expect_same(f"{attr} after writing {value[:20]!r}", pair.r.attr(attr),
                             pair.c.attr(attr))
        if r == 0 and attr in LIVE and pair.r.powered:
            self.expect_same(f"hardware queues after {attr}={value[:20]!r}",
                             self.hw_queues(pair.r), self.hw_queues(pair.c))

    def poll_without_map(self, pair, attr, value):
        """Whether writing VALUE to ATTR asks for poll queues, within the
        module's poll_queues, on a powered device whose tag set was made
        without any (see Documentation/rnull.rst)."""
        if attr != "poll_queues" or not pair.r.powered or not pair.one_map:
            return False
        if pair.r.attr("shared_tags") == "1" or not re.fullmatch(r"\d+\n?", value):
            return False
        return 0 < int(value) <= int(self.params.get("poll_queues", "1"))

    def c_cuts_queues(self, pair, attr, value):
        """Whether writing VALUE to ATTR asks null_blk's powered device for more
        queues than blk-mq makes on its tag set (see Documentation/rnull.rst)."""
        if attr not in LIVE or not pair.r.powered or not pair.one_map:
            return False
        if not re.fullmatch(r"\d+\n?", value) or int(value) > 0xFFFFFFFF:
            # Not a number, or too large for the attribute: refused alike.
            return False
        counts = {a: int(pair.c.attr(a)) for a in LIVE}
        counts[attr] = int(value)
        return counts["submit_queues"] > 0 and sum(counts.values()) > CPUS

    def hw_queues(self, side):
        try:
            return len([d for d in os.listdir(f"/sys/block/{side.name}/mq") if d.isdigit()])
        except OSError:
            return None

    def c_hazard(self, side):
        """Why powering null_blk's device on with its settings is unsafe, if
        it is, and the errno rnull gives at power-on with them."""
        a = {x: side.attr(x) for x in ATTRS}
        num = lambda x: int(a[x]) if a[x].isdigit() else 0
        if num("home_node") != 4294967295 and num("home_node") >= ONLINE_NODES:
            return "a home_node that is not online", "EINVAL"
        if side.throttled and num("mbps") == 0:
            # null_blk never clears the throttle flag of its first throttled
            # power-on: requests take the throttle path, whose timer this
            # power-on does not set up, and the partition scan oopses.
            return "mbps 0 after a power-on with mbps set", "0"
        bs = num("blocksize") or 512
        ms = num("max_sectors")
        if ms and (ms < PAGE_SIZE // 512 or ms < bs // 512) and num("queue_mode") != 1:
            return "max_sectors below a page", "EINVAL"
        if num("size") > (2**64 - 1) >> 20:
            # null_blk's capacity in bytes wraps around.
            return "a size of 16 EiB or more", "EINVAL"
        if (num("memory_backed") and num("cache_size") and bs > PAGE_SIZE
                and (bs & (bs - 1)) == 0 and bs <= 65536):
            # null_blk's cache write-back copies past its pages.
            return "a cache with blocks larger than a page", "0"
        if num("memory_backed") and num("cache_size") << 20 >= 2**64 - 2**40:
            # null_blk's flush adds the cache's size in bytes to what it
            # holds: the sum wraps, and it loops with interrupts off.
            return "a cache of nearly 16 EiB", "0"
        if num("memory_backed") and num("blocksize") == 0:
            # null_blk copies in steps of 0 bytes: the partition scan at
            # power-on never ends.
            return "a block size of 0 on a memory-backed device", "0"
        zone_size = num("zone_size")
        if (num("zoned") and zone_size & (zone_size - 1) == 0 and 0 < zone_size <= num("size")
                and num("size") // zone_size >= 1 << 20):
            # A zone table of millions of zones: gigabytes on either driver,
            # and null_blk's zone count wraps from 2^32 zones on.
            return "a zoned disk of a million zones or more", "skip"
        if num("zoned") and 0 < zone_size <= num("size") and zone_size << 11 >= 1 << 32:
            # null_blk's 32-bit zone size limit of the queue wraps.
            return "a zone of 2 TiB or more", "EINVAL"
        if num("shared_tags") and num("memory_backed") and self.params.get("blocking") != "1":
            # null_blk's shared tag set is not blocking: it sleeps in queue_rq.
            # rnull's is when the memory_backed parameter is set, else it
            # refuses.
            rnull_blocks = self.params.get("memory_backed") == "1"
            return "a memory-backed disk on a shared tag set", "0" if rnull_blocks else "EINVAL"
        return None, None

    def op_power(self, pair):
        if not pair.r.exists:
            return
        on = not pair.r.powered
        if not on:
            self.note(f"power off {pair.r.name}")
            pair.epoch += 1
            r = write(f"{pair.r.dir}/power", "0")
            c = 0 if pair.c_skipped else write(f"{pair.c.dir}/power", "0")
            self.expect_same("power off", ename(r), ename(c))
            pair.r.powered = pair.c.powered = False
            pair.c_skipped = False
            return
        # Both devices are off: they must agree on every setting, or what
        # follows compares nothing.
        for a in ATTRS:
            self.expect_same(f"{a} before power-on", pair.r.attr(a), pair.c.attr(a))
        hazard, rnull_answer = self.c_hazard(pair.c)
        if rnull_answer == "skip":
            self.note(f"power on {pair.r.name} skipped: {hazard}")
            return
        self.note(f"power on {pair.r.name}" + (f" (rnull only: {hazard})" if hazard else ""))
        r = write(f"{pair.r.dir}/power", "1")
        if hazard:
            # rnull must refuse what null_blk would crash on; where it takes
            # what null_blk mishandles, other settings may still be wrong.
            allowed = {rnull_answer} | ({"EINVAL"} if rnull_answer == "0" else set())
            if ename(r) not in allowed:
                raise Failure(f"rnull power-on with {hazard}: expected {rnull_answer}, "
                              f"got {ename(r)}; settings: {self.describe(pair.r)}")
            pair.c_skipped = r == 0
            pair.r.powered = r == 0
            pair.zones_changed = False
            pair.one_map = pair.r.attr("poll_queues") == "0"
            self.indexes_differ |= r == 0
            # A power-on keeps the rewrites of the checks that ran, failed or
            # not (null_blk's too): null_blk's device takes them as well, as
            # it would have made them.
            for a in ATTRS:
                write(f"{pair.c.dir}/{a}", pair.r.attr(a))
            if r == 0 and pair.r.written:
                self.verify_written(pair, pair.r)
            return
        c = write(f"{pair.c.dir}/power", "1")
        self.expect_same("power on", ename(r), ename(c))
        pair.r.powered, pair.c.powered = r == 0, c == 0
        pair.c.throttled |= c == 0 and pair.c.attr("mbps") != "0"
        pair.zones_changed = False
        pair.one_map = pair.r.attr("poll_queues") == "0"
        if r == 0:
            # Indexes come from a pool per driver: they agree unless a device
            # of rnull's was on alone since the pools were last both empty.
            if not any(s.powered for p in self.pairs if p is not pair for s in (p.r, p.c)):
                self.indexes_differ = False
            for a in ATTRS + ([] if self.indexes_differ else ["index"]):
                self.expect_same(f"{a} after power-on", pair.r.attr(a), pair.c.attr(a))
            self.expect_same("disk shape", self.shape(pair.r), self.shape(pair.c))
            for s in pair.sides():
                if s.written:
                    self.verify_written(pair, s)

    def shape(self, side):
        q = f"/sys/block/{side.name}/queue"
        return " ".join(read(f"{q}/{a}") for a in
                        ["logical_block_size", "max_hw_sectors_kb", "rotational", "write_cache",
                         "fua", "discard_max_hw_bytes", "io_poll", "virt_boundary_mask"]) + \
            f" size={read(f'/sys/block/{side.name}/size')} hwq={self.hw_queues(side)}"

    def fio_args(self, side, verify, depth, seed, rw):
        """A short fio job on the first MiBs of SIDE's disk, or None if the
        disk has less than one."""
        sectors = read(f"/sys/block/{side.name}/size")
        size_mb = int(sectors) >> 11 if sectors.isdigit() else 0
        lbs = read(f"/sys/block/{side.name}/queue/logical_block_size")
        bs = max(int(lbs) if lbs.isdigit() else 512, 4096)
        region = min(size_mb, 8)
        if region < 1 or bs > region << 20:
            return None
        # A job that starts after its disk went away must not make a plain
        # file in its place: devtmpfs would not replace it with the disk.
        args = ["--name=fuzz", f"--filename=/dev/{side.name}", "--allow_file_create=0",
                "--direct=1",
                "--ioengine=io_uring", f"--size={region}M", f"--bs={bs}",
                f"--iodepth={depth}", f"--randseed={seed}"]
        if verify:
            args += ["--rw=randwrite", "--verify=crc32c", "--do_verify=1", "--end_fsync=1",
                     f"--io_size={min(region, 2)}M"]
        else:
            args += [f"--rw={rw}", "--io_size=1M", "--norandommap"]
        return args

    def op_fio(self, pair):
        # Every random choice first, whatever happens next: whether a job
        # still runs depends on timing, and the sequence must not.
        verify_roll, polled_roll = self.rng.random(), self.rng.random()
        depth = self.rng.choice([1, 4, 16])
        seed = self.rng.randrange(1 << 30)
        rw = self.rng.choice(["randread", "randrw", "read"])
        if not pair.r.powered:
            return
        sides = [s for s in pair.sides() if s.powered]
        if any(j.pair is pair for j in self.jobs):
            return
        mb = pair.r.attr("memory_backed") == "1"
        verify = mb and verify_roll < 0.7
        zoned = read(f"/sys/block/{pair.r.name}/queue/zoned") == "host-managed"
        if zoned and pair.r.attr("zone_max_active") != "0":
            # fio keeps the open limit, which it reads from sysfs, but not
            # the active one: its writes would fail on both drivers alike.
            verify, rw = False, "randread"
        # Polled I/O where the disk can poll (a disk made without poll queues
        # cannot, whatever its poll_queues says now). Writes to zoned disks
        # too: the series fixes the block layer's crash in poll when such a
        # write waits in its zone's plug.
        polled = polled_roll < 0.3
        can_poll = lambda s: read(f"/sys/block/{s.name}/queue/io_poll") == "1"
        args = self.fio_args(pair.r, verify, depth, seed, rw)
        if args is not None and zoned:
            # fio's zbd mode wants at least a whole zone, and keeps every
            # zone of the disk in a small shared pool: not on a disk of
            # more zones than fits there.
            chunk = read(f"/sys/block/{pair.r.name}/queue/chunk_sectors")
            zone_mb = int(chunk) >> 11 if chunk.isdigit() else 0
            if int(read(f"/sys/block/{pair.r.name}/queue/nr_zones") or 0) > 16384:
                return
            args = [f"--size={max(zone_mb, 8)}M" if a.startswith("--size=") and zone_mb > 8
                    else a for a in args] + ["--zonemode=zbd"]
            # A zone holds what its capacity says: fio writes more than that
            # by resetting it, which loses what it would verify, on both
            # drivers alike. The verifying job writes at most a zone's worth.
            cap = pair.r.attr("zone_capacity")
            cap_mb = int(cap) if cap.isdigit() and cap != "0" else zone_mb
            if verify and 0 < cap_mb < 2:
                args = [f"--io_size={cap_mb}M" if a.startswith("--io_size=") else a
                        for a in args]
        if args is None:
            return
        self.note(f"fio {' '.join(args[5:])}{' hipri' if polled else ''} on {pair.r.name}")
        for s in sides:
            a = [x.replace(f"/dev/{pair.r.name}", f"/dev/{s.name}") for x in args]
            # null_blk sleeps in poll on memory-backed devices: not polled there.
            if polled and can_poll(s) and (s is pair.r or not mb):
                a.append("--hipri")
            s.written = None
            # A job that may fail is not checked (see Pair.zones_changed and
            # Pair.bad_blocks).
            epoch = None if pair.zones_changed or pair.bad_blocks else pair.epoch
            self.jobs.append(Job(pair, s, a, verify, epoch))

    def reap(self, wait=False):
        still = []
        for job in self.jobs:
            if wait:
                job.proc.wait()
            if job.proc.poll() is None:
                still.append(job)
                continue
            out = job.proc.stdout.read()
            if job.epoch != job.pair.epoch:
                continue  # the device went off meanwhile: errors are expected
            if job.proc.returncode != 0:
                msg = (f"fio on /dev/{job.side.name}, which stayed powered, failed "
                       f"({' '.join(job.args)}):\n{self.errors(out)}\n"
                       f"settings: {self.describe(job.side)}; {self.node(job.side)}")
                if job.side is job.pair.r:
                    raise Failure(msg)
                # null_blk's own bugs are not rnull's failures: shown only.
                log(f"fuzz: note: {msg}")
                continue
            # The end_fsync of a polled (--hipri) io_uring job does not reach
            # the device as a FLUSH (seen: data it left in a cache is gone
            # after a power cycle unless an fsync(2) follows): what a cache
            # holds is then rightly lost. Only other jobs' data must stay.
            if job.verify and "--hipri" not in job.args:
                job.side.written = job.args
        self.jobs = still

    @staticmethod
    def errors(out):
        return "\n".join(l for l in out.splitlines() if not l.startswith("3;"))[-2000:]

    def describe(self, side):
        """The settings of SIDE and of its disk, for failure reports."""
        attrs = " ".join(f"{a}={side.attr(a)}" for a in ATTRS)
        q = f"/sys/block/{side.name}/queue"
        return (f"{attrs}; module: {' '.join(f'{k}={v}' for k, v in self.params.items())}; "
                f"io_poll={read(q + '/io_poll')} hwq={self.hw_queues(side)} "
                f"types={read(f'/sys/kernel/debug/block/{side.name}/hctx0/type')}")

    @staticmethod
    def node(side):
        """The device node of SIDE's disk against the disk's number in sysfs:
        a node missing or stale after a disk of the same name was removed
        was seen once (Documentation/rnull.rst)."""
        try:
            st = os.stat(f"/dev/{side.name}")
            node = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
            if not stat.S_ISBLK(st.st_mode):
                node = f"not a block device (mode {st.st_mode:o})"
        except OSError as e:
            node = os.strerror(e.errno)
        return f"/dev/{side.name}: {node}, /sys/block/{side.name}/dev: " + \
            read(f"/sys/block/{side.name}/dev")

    def verify_written(self, pair, side):
        if side.attr("zoned") == "1":
            # The zones come back empty: past their write pointers, both
            # drivers read 0xff, whatever was written.
            side.written = None
            return
        if side.attr("memory_backed") != "1":
            # Data is kept while memory backing is off, but not readable:
            # checked at a later power-on with memory backing.
            return
        bs = next(int(a[5:]) for a in side.written if a.startswith("--bs="))
        lbs = read(f"/sys/block/{side.name}/queue/logical_block_size")
        if lbs.isdigit() and int(lbs) > bs:
            # Direct reads smaller than a block fail (EINVAL): checked at a
            # later power-on with a smaller block size.
            return
        args = [a for a in side.written if not a.startswith("--do_verify")] + ["--verify_only=1"]
        self.note(f"verify /dev/{side.name} after power-on")
        status, out = run("fio", "--output-format=terse", *args)
        if status != 0:
            msg = (f"data written before a power cycle of /dev/{side.name} is lost "
                   f"({' '.join(args)}):\n{self.errors(out)}\nsettings: {self.describe(side)}")
            if side is pair.r:
                raise Failure(msg)
            # null_blk loses cached data when a cache was turned off (see
            # Documentation/rnull.rst): shown only.
            log(f"fuzz: note: {msg}")
            side.written = None

    def step(self):
        self.op += 1
        pair = self.rng.choice(self.pairs)
        roll = self.rng.random()
        if roll < 0.04:
            kind = "load"
        elif roll < 0.10:
            kind = "mkdir"
        elif roll < 0.14:
            kind = "rmdir"
        elif roll < 0.62:
            kind = "write"
        elif roll < 0.80:
            kind = "power"
        elif roll < 0.94:
            kind = "fio"
        else:
            kind = "wait"
        self.stats[kind] = self.stats.get(kind, 0) + 1
        if kind == "load":
            self.op_load()
        elif kind == "mkdir":
            self.op_mkdir(pair)
        elif kind == "rmdir":
            self.op_rmdir(pair)
        elif kind == "write":
            self.op_write(pair)
        elif kind == "power":
            self.op_power(pair)
        elif kind == "fio":
            self.op_fio(pair)
        else:
            self.reap(wait=True)
        self.reap()
        if self.op % 10 == 0:
            self.check_log()

    def cleanup(self):
        self.reap(wait=True)
        for p in self.pairs:
            for s in (p.r, p.c):
                if os.path.isdir(s.dir):
                    write(f"{s.dir}/power", "0")
                    rmdir(s.dir)
        rmmod("rnull")
        rmmod("null_blk")

    def watchdog(self):
        # A hang is a failure: report it rather than wait for the VM's idle
        # timeout, and show the blocked tasks.
        while True:
            time.sleep(10)
            since = self.busy_since
            if since is not None and time.monotonic() - since > 180:
                # On the console too: a process whose operation is stuck
                # in an uninterruptible wait cannot exit, and the test
                # would never show its output.
                progress(f"fuzz: seed {self.seed}: operation {self.op} hangs; last operations:")
                for h in self.history[-15:]:
                    progress("  " + h)
                write("/proc/sysrq-trigger", "w")
                time.sleep(2)
                progress("\n".join(run("dmesg")[1].splitlines()[-200:]))
                os._exit(1)

    def run(self):
        threading.Thread(target=self.watchdog, daemon=True).start()
        start = time.monotonic()
        try:
            while self.op < self.ops and time.monotonic() - start < self.seconds:
                self.busy_since = time.monotonic()
                self.step()
                if self.op % 500 == 0:
                    progress(f"fuzz: {self.op} operations, {time.monotonic() - start:.0f} s")
            self.busy_since = time.monotonic()
            self.cleanup()
            self.check_log()
        except Failure as f:
            log(f"fuzz: seed {self.seed}: operation {self.op} failed: {f}")
            log("last operations:")
            for h in self.history[-15:]:
                log("  " + h)
            log(f"replay: RNULL_FUZZ_SEED={self.seed} RNULL_FUZZ_OPS={self.op} make check")
            self.busy_since = None
            return 1
        self.busy_since = None
        log(f"fuzz: seed {self.seed}: {self.op} operations in {time.monotonic() - start:.0f} s, "
            f"no difference ({', '.join(f'{k} {v}' for k, v in sorted(self.stats.items()))})")
        return 0


def main():
    seed = int(os.environ.get("RNULL_FUZZ_SEED") or random.SystemRandom().randrange(1 << 32))
    ops = int(os.environ.get("RNULL_FUZZ_OPS") or 10**9)
    seconds = float(os.environ.get("RNULL_FUZZ_SECONDS") or 60)
    progress(f"fuzz: seed {seed}")
    sys.exit(Fuzzer(seed, ops, seconds).run())


if __name__ == "__main__":
    main()
