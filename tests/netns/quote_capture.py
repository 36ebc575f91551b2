#!/usr/bin/env python3
"""quote_capture.py IFACE SRC DPORT TYPE BYTES - waits (at most 5 s) for a UDP
datagram from SRC (address) to port DPORT on IFACE whose ri2n header has type
TYPE, and prints the first BYTES bytes of its payload in hex, its send time
(header bytes 16-19) replaced by "now" (icmp_forge.py's token).  What a host
on the path would copy to forge an ICMP error about a real datagram: the
control of tests/netns/test_icmp.sh dead-peer-forged."""
import socket, sys, time
iface, src, dport, typ, nbytes = sys.argv[1], socket.inet_aton(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((iface, 0))
s.settimeout(0.2)
end = time.monotonic() + 5
while time.monotonic() < end:
    try:
        f = s.recv(65536)
    except socket.timeout:
        continue
    ip = f[14:]
    if len(ip) < 28 or ip[9] != 17 or ip[12:16] != src:
        continue
    udp = ip[(ip[0] & 15) * 4:]
    pay = udp[8:]
    if int.from_bytes(udp[2:4], "big") != dport or len(pay) < nbytes or pay[1] != typ:
        continue
    print(pay[:16].hex() + "now" + pay[20:nbytes].hex())
    sys.exit(0)
sys.exit("no such datagram seen")
