#!/usr/bin/env python3
"""rail_capture.py STOPFILE PATFILE IFACE... - a raw capture of the UDP
payloads on the given rail interfaces until STOPFILE exists.  Prints
"capturing" once the sockets are open, then "frames=N bytes=B hits=H", where
H counts captured frames holding a 16-byte piece of the first KiB of the
text in PATFILE (with GRO one frame holds many datagrams).  Used by
tests/netns/test_keyed.sh and bench/run.sh's capture check."""
import os, socket, sys, time
stop, patfile, ifs = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(patfile, "rb").read(4096)
pieces = [text[i:i + 16] for i in range(0, 1024, 16)]
socks = []
for name in ifs:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE: keep up with the rails
    s.bind((name, 0))
    s.setblocking(False)
    socks.append(s)
print("capturing", flush=True)
n = nbytes = hits = 0
while not os.path.exists(stop):
    got = False
    for s in socks:
        try:
            f = s.recv(65536)
        except BlockingIOError:
            continue
        got = True
        ip = f[14:]
        if len(ip) < 28 or ip[9] != 17:
            continue
        udp = ip[(ip[0] & 15) * 4 + 8:]
        n += 1
        nbytes += len(udp)
        hits += any(p in udp for p in pieces)
    if not got:
        time.sleep(0.0005)
print("frames=%d bytes=%d hits=%d" % (n, nbytes, hits), flush=True)
