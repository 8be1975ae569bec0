#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One emulated host of scripts/cluster/cluster.sh: its init process and its "sshd".

    cluster_node.py serve SOCK        (PID 1 of the host's namespaces)
    cluster_node.py call [--ssh] SOCK ARG...
    cluster_node.py holders RUN       (pids of RUN's holders, for down)
    cluster_node.py status RUN        (cluster.sh status)

serve: runs as PID 1 inside a host's namespaces (network, PID, UTS, mount,
IPC; cluster.sh makes them with unshare). It reaps orphans, as an init
must, and runs commands asked for on the Unix socket SOCK: the caller
passes its stdin, stdout and stderr (SCM_RIGHTS), argv, environment and
working directory; the command runs in a session of its own, and its wait
status goes back to the caller. If the caller goes away first, every
process of the command's session gets SIGTERM, then SIGKILL after 3 s, as
a cut connection ends a remote job; what outlives a command that ended by
itself runs on (cluster.sh status lists it, cluster.sh down ends it).

Why not nsenter: a process can enter another PID namespace only if it is
a descendant of its own, so a launcher on host1 (mpirun, an orted,
Hydra's proxy) could never nsenter into host2; the socket is reachable
from every host (the run directory is on a file system all mount
namespaces share) and the command starts inside the target, as with ssh.

call: the client. It exits with the command's status (128 + signal if it
was killed), 255 if the host could not be reached or went away (as ssh).
--ssh behaves as ssh does: the arguments are joined with spaces and run by
/bin/sh -c, in a fresh login-like environment (HOME, PATH, USER, LOGNAME,
SHELL; DPS_RUN_TAG and DPS_CLUSTER_DIR are passed on if set) in $HOME.
Without --ssh, ARG... is the argv, run with the caller's environment and
working directory (cluster.sh run).
"""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

SSH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SSH_PASS = ("DPS_RUN_TAG", "DPS_CLUSTER_DIR", "LANG", "TERM")
KILL_GRACE = 3.0


def die(msg, code):
    sys.stderr.write("cluster_node: %s\n" % msg)
    sys.exit(code)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def session_pids(sid):
    """Live processes of session sid, from this namespace's /proc."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after the command name, which may hold spaces or ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        # A zombie is dead already (our own child waits to be reaped).
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(d))
    return pids


def kill_session(sid):
    """SIGTERM every process of the session, SIGKILL what is left."""
    deadline = time.monotonic() + KILL_GRACE
    sig = signal.SIGTERM
    while True:
        pids = session_pids(sid)
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        if sig == signal.SIGKILL:
            return
        time.sleep(0.1)
        if time.monotonic() > deadline:
            sig = signal.SIGKILL


def run_session(conn):
    """Child of the server: one request, start to end. Never returns."""
    try:
        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
        if len(fds) != 3:
            raise EOFError("expected 3 descriptors, got %d" % len(fds))
        (n,) = struct.unpack("!I", recv_exact(conn, 4))
        req = json.loads(recv_exact(conn, n))
    except (OSError, EOFError, ValueError) as e:
        sys.stderr.write("cluster_node: bad request: %s\n" % e)
        os._exit(1)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            for i, fd in enumerate(fds):
                os.dup2(fd, i)
            os.closerange(3, 65536)
            # Dispositions the server set (and Python's SIGPIPE) would
            # survive exec.
            for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGHUP,
                        signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            os.chdir(req["cwd"])
            os.execvpe(req["argv"][0], req["argv"], req["env"])
        except OSError as e:
            os.write(2, ("cluster_node: %s: %s\n" %
                         (req["argv"][0], e.strerror)).encode())
            os._exit(127 if e.errno == 2 else 126)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    while True:
        r, _, _ = select.select([pidfd, conn], [], [])
        if pidfd in r:
            _, status = os.waitpid(pid, 0)
            if os.WIFSIGNALED(status):
                msg = "signal %d" % os.WTERMSIG(status)
            else:
                msg = "exit %d" % os.WEXITSTATUS(status)
            try:
                conn.sendall(msg.encode())
            except OSError:
                pass
            # What the command left running goes on, as after ssh: a
            # leak shows in cluster.sh status, and down ends it.
            os._exit(0)
        if conn in r:
            # The caller sends nothing after the request: readable means
            # it closed, the remote end of an ssh connection that died.
            kill_session(pid)
            os.waitpid(pid, 0)
            os._exit(0)


def serve(path):
    """PID 1 of a host: reap orphans, serve requests until SIGTERM."""
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    os.chmod(path, 0o600)
    lsock.listen(64)
    while True:
        r, _, _ = select.select([lsock], [], [], 1.0)
        if r:
            conn, _ = lsock.accept()
            if os.fork() == 0:
                lsock.close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                run_session(conn)
            conn.close()
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass


def call(argv):
    ssh = False
    if argv and argv[0] == "--ssh":
        ssh = True
        argv = argv[1:]
    if len(argv) < 2:
        die("usage: cluster_node.py call [--ssh] SOCK ARG...", 2)
    path, args = argv[0], argv[1:]
    if ssh:
        home = os.environ.get("HOME", "/root")
        env = {"HOME": home, "PATH": SSH_PATH, "SHELL": "/bin/sh",
               "USER": os.environ.get("USER", "root"),
               "LOGNAME": os.environ.get("LOGNAME", "root")}
        for k in SSH_PASS:
            if k in os.environ:
                env[k] = os.environ[k]
        req = {"argv": ["/bin/sh", "-c", " ".join(args)], "env": env,
               "cwd": home}
    else:
        req = {"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}
    data = json.dumps(req).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        socket.send_fds(sock, [b"F"], [0, 1, 2])
        sock.sendall(struct.pack("!I", len(data)) + data)
        reply = b""
        while True:
            chunk = sock.recv(64)
            if not chunk:
                break
            reply += chunk
    except OSError as e:
        die("%s: %s" % (path, e.strerror or e), 255)
    words = reply.decode().split()
    if len(words) != 2:
        die("%s: host went away before the command ended" % path, 255)
    code = int(words[1])
    sys.exit(code if words[0] == "exit" else 128 + code)


def read_proc(pid, what):
    try:
        with open("/proc/%s/%s" % (pid, what), "rb") as f:
            return f.read()
    except OSError:
        return b""


def holders(run):
    """Pids of every holder of run directory RUN (and their unshare)."""
    mark = ("cluster_node.py\0serve\0%s/" % run.rstrip("/")).encode()
    for d in os.listdir("/proc"):
        if d.isdigit() and mark in read_proc(d, "cmdline"):
            print(d)


def node_pid(run, name):
    """Pid of NAME's PID 1 as its pid file says, if that is still it."""
    try:
        with open("%s/%s.pid" % (run, name)) as f:
            pid = f.read().strip()
    except OSError:
        return None
    mark = ("cluster_node.py\0serve\0%s/%s.sock\0" % (run, name)).encode()
    return pid if mark in read_proc(pid, "cmdline") else None


def in_node(pid, script):
    """Output of /bin/sh -c SCRIPT in pid's network and UTS namespaces."""
    r = subprocess.run(["nsenter", "-t", pid, "-n", "-u", "/bin/sh", "-c",
                        script], capture_output=True, text=True)
    return r.stdout


def status(run):
    """What cluster.sh status prints; exit 1 if something is down."""
    try:
        with open(run + "/nodes") as f:
            nodes = [l.split() for l in f if l.strip()]
    except OSError:
        print("cluster.sh: status: no cluster in %s" % run)
        sys.exit(1)
    try:
        with open(run + "/rate") as f:
            rate = f.read().strip()
    except OSError:
        rate = "?"
    # One pass over /proc: every process by PID namespace.
    byns = {}
    for d in sorted((d for d in os.listdir("/proc") if d.isdigit()), key=int):
        try:
            ns = os.readlink("/proc/%s/ns/pid" % d)
        except OSError:
            continue
        byns.setdefault(ns, []).append(d)
    bad = 0
    print("cluster in %s: rate %s" % (run, rate))
    for name, role, addr in nodes:
        pid = node_pid(run, name)
        if pid is None:
            print("%s (%s) %s: DOWN" % (name, role, addr))
            bad = 1
            continue
        out = in_node(pid, "hostname; ip -4 -br addr show dev eth0 "
                      "2>/dev/null").split()
        host = out[0] if out else "?"
        # The veth goes with the switch: a dead switch leaves no eth0.
        have = " ".join(out[2:4]) if len(out) >= 4 else "MISSING"
        if len(out) < 4:
            bad = 1
        print("%s (%s) pid %s, hostname %s, eth0 %s" %
              (name, role, pid, host, have))
        try:
            ns = os.readlink("/proc/%s/ns/pid" % pid)
        except OSError:
            continue
        for p in byns.get(ns, []):
            if p == pid:
                continue
            nspid = "?"
            for line in read_proc(p, "status").decode(
                    errors="replace").split("\n"):
                if line.startswith("NSpid:"):
                    nspid = line.split()[-1]
            cmd = read_proc(p, "cmdline").replace(b"\0", b" ").decode(
                errors="replace").strip()
            print("    %-7s [%s] %s" % (p, nspid, cmd[:150]))
    pid = node_pid(run, "switch")
    if pid is None:
        print("switch: DOWN")
        bad = 1
    else:
        ports = in_node(pid, "ip -br link show master br0").split("\n")
        print("switch pid %s, ports: %s" % (pid, " ".join(
            l.split()[0].split("@")[0] for l in ports if l.strip())))
    sys.exit(bad)


def main():
    a = sys.argv[1:]
    if a and a[0] in ("holders", "status"):
        # Into a pipe that closes early (| head): end quietly, as ls does.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if len(a) == 2 and a[0] == "serve":
        serve(a[1])
    elif len(a) >= 1 and a[0] == "call":
        call(a[1:])
    elif len(a) == 2 and a[0] == "holders":
        holders(a[1])
    elif len(a) == 2 and a[0] == "status":
        status(a[1])
    else:
        die("usage: cluster_node.py serve SOCK | call [--ssh] SOCK ARG... | "
            "holders RUN | status RUN", 2)


if __name__ == "__main__":
    main()
