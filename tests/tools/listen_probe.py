#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Raw-protocol client for `dpu_agent --listen` tests: sends hellos built
here (independently of common/dps_listen.c), broken ones on purpose, and
fuzzes the listener. Prints the listener's answer line.

usage:
  listen_probe.py ADDR PORT VERSION hello JOB (SECRET_HEX|random) [VER]
  listen_probe.py ADDR PORT VERSION rawname NAME
  listen_probe.py ADDR PORT VERSION writekey DIR JOB MODE   (prints hex)
  listen_probe.py ADDR PORT VERSION fuzz SECONDS DIR
"""
import os
import random
import socket
import struct
import sys
import threading
import time

MAGIC = 0x4C535044
HDR = 44


def hello(version, name, secret, magic=MAGIC, name_len=None):
    if name_len is None:
        name_len = len(name)
    return struct.pack('<IHHI', magic, version, 0, name_len) + secret + name


def exchange(addr, port, data, timeout=3.0, chunks=None, pause=0.0,
             connected=None):
    """Send data (or chunks with a pause between them), return the answer
    line, '<closed>' or '<timeout>'. connected: an Event set once the
    connection is made."""
    s = socket.create_connection((addr, port), timeout=timeout)
    if connected is not None:
        connected.set()
    try:
        s.settimeout(timeout)
        for c in (chunks if chunks is not None else [data]):
            if c:
                s.sendall(c)
            if pause:
                time.sleep(pause)
        buf = b''
        while b'\n' not in buf:
            b = s.recv(4096)
            if not b:
                break
            buf += b
        if not buf:
            return '<closed>'
        return buf.split(b'\n')[0].decode('ascii', 'replace')
    except socket.timeout:
        return '<timeout>'
    except (ConnectionResetError, BrokenPipeError):
        return '<reset>'
    finally:
        s.close()


def write_key(d, job, mode):
    secret = os.urandom(32)
    path = os.path.join(d, job + '.key')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, (secret.hex() + '\n').encode())
    os.fchmod(fd, mode)
    os.close(fd)
    return secret


def fuzz(addr, port, version, seconds, d):
    """Random and broken clients, many at once, for at most `seconds`.
    Every one must be refused or closed; none may be accepted."""
    rnd = random.Random(int(os.environ.get('DPS_FUZZ_SEED', '1')))
    secret = write_key(d, 'fuzzjob', 0o600)
    good = hello(version, b'fuzzjob', secret)
    lock = threading.Lock()
    counts = {}
    bad = []

    def note(kind, ans):
        with lock:
            key = kind + ' -> ' + (ans if ans.startswith('<') else
                                   ans.split(' ')[0])
            counts[key] = counts.get(key, 0) + 1
            if ans.startswith('ok'):
                bad.append(kind + ': accepted: ' + ans)

    def one(i):
        kind = rnd.choice(['random', 'truncated', 'flipped', 'slow',
                           'connect-close', 'extra', 'huge-len'])
        try:
            if kind == 'random':
                n = rnd.randrange(1, 200)
                data = bytes(rnd.randrange(256) for _ in range(n))
                if rnd.random() < 0.5:   # past the magic check
                    data = good[:rnd.randrange(4, 12)] + data
                note(kind, exchange(addr, port, data))
            elif kind == 'truncated':
                note(kind, exchange(addr, port,
                                    good[:rnd.randrange(0, len(good))]))
            elif kind == 'flipped':
                b = bytearray(good)
                bit = rnd.randrange(len(b) * 8)
                b[bit // 8] ^= 1 << (bit % 8)
                note(kind, exchange(addr, port, bytes(b)))
            elif kind == 'slow':
                data = good if rnd.random() < 0.5 else good[:-1] + b'/'
                b = bytearray(data)
                bit = rnd.randrange(12 * 8, len(b) * 8)   # secret or name
                b[bit // 8] ^= 1 << (bit % 8)
                chunks = [bytes(b[j:j + 7]) for j in range(0, len(b), 7)]
                note(kind, exchange(addr, port, None, chunks=chunks,
                                    pause=0.03))
            elif kind == 'connect-close':
                s = socket.create_connection((addr, port), timeout=3)
                s.close()
                note(kind, '<closed>')
            elif kind == 'extra':
                b = bytearray(good)
                b[12] ^= 1
                note(kind, exchange(addr, port, bytes(b) + b'x' *
                                    rnd.randrange(1, 100)))
            else:
                n = rnd.choice([0, 65, 1000, 0xffffffff])
                note(kind, exchange(addr, port,
                                    hello(version, b'fuzzjob', secret,
                                          name_len=n)))
        except OSError as e:
            note(kind, '<error %s>' % e.__class__.__name__)

    # A client that stops half-way is refused when its 5 s are up. It
    # connects before the crowd below, so it is not the one refused busy.
    stall_answer = []
    stall_connected = threading.Event()

    def stall():
        try:
            stall_answer.append(exchange(addr, port, good[:20], timeout=8,
                                         connected=stall_connected))
        finally:
            stall_connected.set()

    # More idle clients than the listener waits for at once: the excess
    # is refused as busy, the rest at their deadline or when closed.
    def crowd():
        socks = []
        for _ in range(80):
            try:
                socks.append(socket.create_connection((addr, port),
                                                      timeout=3))
            except OSError:
                pass
        time.sleep(0.5)
        busy = 0
        for s in socks:
            s.setblocking(False)
            try:
                if s.recv(200).startswith(b'refused busy'):
                    busy += 1
            except OSError:
                pass
            s.close()
        with lock:
            counts['crowd of %d idle: refused busy' % len(socks)] = busy

    t_stall = threading.Thread(target=stall)
    t_stall.start()
    stall_connected.wait(5)
    time.sleep(0.2)   # let the listener take it in before the crowd
    crowd()
    # Tests that start a job meanwhile wait for this line: a job that
    # came while the crowd held every slot would be refused busy.
    print('fuzz: crowd gone', flush=True)
    end = time.time() + seconds
    n = 0
    threads = []
    while time.time() < end and n < 400:
        threads = [t for t in threads if t.is_alive()]
        if len(threads) >= 24:
            time.sleep(0.005)
            continue
        t = threading.Thread(target=one, args=(n,))
        t.start()
        threads.append(t)
        n += 1
    for t in threads:
        t.join(10)
    t_stall.join(10)
    for k in sorted(counts):
        print('fuzz: %-40s %d' % (k, counts[k]))
    print('fuzz: %d connections in %.1f s' % (n, seconds - (end - time.time())))
    print('fuzz: stalled client got: %s' %
          (stall_answer[0] if stall_answer else '<nothing>'))
    ok = not bad
    if not stall_answer or 'no complete hello within' not in stall_answer[0]:
        print('fuzz: the stalled client was not refused at its deadline')
        ok = False
    if not any(k.startswith('crowd') and v > 0 for k, v in counts.items()):
        print('fuzz: no idle client was refused as busy')
        ok = False
    for b in bad:
        print('fuzz: ' + b)
    return 0 if ok else 1


def main(argv):
    addr, port, version, cmd = argv[1], int(argv[2]), int(argv[3]), argv[4]
    if cmd == 'hello':
        job = argv[5].encode()
        secret = os.urandom(32) if argv[6] == 'random' else \
            bytes.fromhex(argv[6])
        ver = int(argv[7]) if len(argv) > 7 else version
        print(exchange(addr, port, hello(ver, job, secret)))
    elif cmd == 'rawname':
        print(exchange(addr, port, hello(version, argv[5].encode(),
                                         os.urandom(32))))
    elif cmd == 'writekey':
        print(write_key(argv[5], argv[6], int(argv[7], 8)).hex())
    elif cmd == 'fuzz':
        return fuzz(addr, port, version, float(argv[5]), argv[6])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
