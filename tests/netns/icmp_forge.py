#!/usr/bin/env python3
"""Sends forged ICMP destination-unreachable messages quoting a UDP flow.

    icmp_forge.py CODE MTU TO INNER_SRC:PORT INNER_DST:PORT [COUNT [GAP_S [QUOTE]]]

TO receives an ICMP type 3 with CODE (4: fragmentation needed, with next-hop
MTU; 3: port unreachable) whose quoted packet is a UDP datagram INNER_SRC ->
INNER_DST, as if a router or host on the path had answered one of its
datagrams.  QUOTE (hex) is the start of that datagram's payload the ICMP
quotes (none by default); "now" in it is replaced by the low 32 bits of
CLOCK_MONOTONIC in microseconds, big-endian, at each send (a send time as
ri2n stamps it).  Root; run it in the namespace it should come from.
"""
import socket
import struct
import sys
import time


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def hostport(s):
    h, p = s.rsplit(":", 1)
    return socket.inet_aton(h), int(p)


def forge(code, mtu, src, dst, quote=b""):
    (sip, sport), (dip, dport) = hostport(src), hostport(dst)
    udp_len = 1400 + 8  # a full-size datagram, as the sender would have sent
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0x1234, 0x4000, 64, 17, 0, sip, dip)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0)
    rest = struct.pack("!HH", 0, mtu if code == 4 else 0)
    msg = struct.pack("!BBH", 3, code, 0) + rest + ip + udp + quote
    return msg[:2] + struct.pack("!H", csum(msg)) + msg[4:]


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    code, mtu, to = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    count = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    gap = float(sys.argv[7]) if len(sys.argv) > 7 else 0.1
    quote = sys.argv[8] if len(sys.argv) > 8 else ""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    for i in range(count):
        now = struct.pack("!I", (time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000) & 0xFFFFFFFF)
        q = bytes.fromhex(quote.replace("now", now.hex()))
        pkt = forge(code, mtu, sys.argv[4], sys.argv[5], q)
        s.sendto(pkt, (to, 0))
        if i + 1 < count:
            time.sleep(gap)


main()
