#!/usr/bin/env python3
"""A forking request/response server and its load generator (bench/rows/real.sh, row "fork").

    forkserve.py serve ADDR PORT [--req B] [--resp B]
    forkserve.py run ADDR PORT [--clients N] [--procs P] [--secs S] [--req B] [--resp B]

serve: socketserver.ForkingTCPServer, one process per connection (as inetd or a database
that forks a backend per client): the child reads requests of --req bytes and answers each
with --resp bytes. run: N connections from P processes (2; each an epoll loop over its share,
like wrk's threads, forked before it connects), each connection sending a request, waiting
for the whole answer and sending the next, for S seconds. Every
byte is checked: a request is its connection's number and a counter (8 bytes each) then a
fixed filler; the answer echoes both numbers, then its own fixed filler. Prints one line,
"fork done clients=N requests=R secs=S rps=X bad=B", and exits 1 if anything was wrong.
"""
import argparse
import os
import selectors
import socket
import socketserver
import struct
import sys
import time

HEAD = struct.Struct("!QQ")


def filler(n, seed):
    return bytes((seed + i * 7) & 0xFF for i in range(n))


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        got = sock.recv(n - len(buf))
        if not got:
            return None
        buf += got
    return bytes(buf)


def serve(args):
    req_fill = filler(args.req - HEAD.size, 1)
    resp_fill = filler(args.resp - HEAD.size, 2)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            s = self.request
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                r = recv_exact(s, args.req)
                if r is None:
                    return
                if r[HEAD.size:] != req_fill:
                    sys.stderr.write("forkserve: a request arrived changed\n")
                    return
                s.sendall(r[:HEAD.size] + resp_fill)

    class Server(socketserver.ForkingTCPServer):
        allow_reuse_address = True
        request_queue_size = 128
        max_children = 1024

    with Server((args.addr, args.port), Handler) as srv:
        print("forkserve listening", flush=True)
        srv.serve_forever()


class Conn:
    def __init__(self, n, sock):
        self.n, self.sock, self.count, self.out, self.got = n, sock, 0, b"", bytearray()


def run(args):
    """The load from --procs processes: each reports "requests bad seconds" on a pipe."""
    pipes, kids = [], []
    for k in range(args.procs):
        share = range(k, args.clients, args.procs)
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            try:
                done, bad, secs = load(args, share)
            except Exception as e:  # a refused or reset connection: counted, reported
                sys.stderr.write("forkserve: %s\n" % e)
                done, bad, secs = 0, len(share), 1.0
            os.write(wr, b"%d %d %.6f" % (done, bad, secs))
            os._exit(0)
        os.close(wr)
        pipes.append(rd)
        kids.append(pid)
    done = bad = 0
    rate = secs = 0.0
    for rd, pid in zip(pipes, kids):
        got = os.read(rd, 64).split()
        os.waitpid(pid, 0)
        if len(got) != 3:
            bad += 1
            continue
        done += int(got[0])
        bad += int(got[1])
        secs = max(secs, float(got[2]))
        rate += int(got[0]) / float(got[2])  # each process over its own run
    print("fork done clients=%d procs=%d requests=%d secs=%.3f rps=%.1f bad=%d"
          % (args.clients, args.procs, done, secs, rate, bad), flush=True)
    return 1 if bad or done == 0 else 0


def load(args, share):
    req_fill = filler(args.req - HEAD.size, 1)
    resp_fill = filler(args.resp - HEAD.size, 2)
    sel = selectors.DefaultSelector()
    conns = []
    for n in share:
        s = socket.create_connection((args.addr, args.port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        conns.append(Conn(n, s))
    done = bad = 0
    start = time.monotonic()
    end = start + args.secs

    def send_next(c):
        c.out = HEAD.pack(c.n, c.count) + req_fill
        sent = c.sock.send(c.out)
        c.out = c.out[sent:]
        sel.modify(c.sock, selectors.EVENT_WRITE if c.out else selectors.EVENT_READ, c)

    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)
        send_next(c)
    live = len(conns)
    while live > 0:
        if time.monotonic() > end + 10:
            sys.stderr.write("forkserve: answers still missing 10 s after the end\n")
            bad += live
            break
        for key, ev in sel.select(timeout=1.0):
            c = key.data
            if c.out:
                sent = c.sock.send(c.out)
                c.out = c.out[sent:]
                if not c.out:
                    sel.modify(c.sock, selectors.EVENT_READ, c)
                continue
            got = c.sock.recv(65536)
            if not got:
                sys.stderr.write("forkserve: connection %d closed by the server\n" % c.n)
                bad += 1
                sel.unregister(c.sock)
                live -= 1
                continue
            c.got += got
            if len(c.got) < args.resp:
                continue
            if len(c.got) > args.resp or HEAD.unpack_from(c.got) != (c.n, c.count) or \
                    c.got[HEAD.size:] != resp_fill:
                bad += 1
            c.got = bytearray()
            c.count += 1
            done += 1
            if time.monotonic() < end:
                send_next(c)
            else:
                sel.unregister(c.sock)
                live -= 1
    secs = time.monotonic() - start
    for c in conns:
        c.sock.close()
    return done, bad, secs


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("serve", "run"))
    p.add_argument("addr")
    p.add_argument("port", type=int)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--secs", type=float, default=3.0)
    p.add_argument("--req", type=int, default=64)
    p.add_argument("--resp", type=int, default=1024)
    args = p.parse_args()
    if min(args.req, args.resp) < HEAD.size:
        p.error("--req and --resp are at least %d bytes" % HEAD.size)
    if args.mode == "serve":
        serve(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
