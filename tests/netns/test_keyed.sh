#!/usr/bin/env bash
# A cluster key on real rails (root; 77 = skipped).
#
#   tests/netns/test_keyed.sh SCENARIO
#
#   capture   h1 sends a file of a known text to h2 over 2 rails, once without a key
#             (the control: the capture must find the text, or it proves nothing),
#             then with a cluster key (AES-128-GCM, the default), then with one and
#             RI2N_KEY_AES256=1 at both ends, while a raw socket in h2's namespace
#             captures every UDP datagram arriving on both rails.  Every file arrives
#             intact; each keyed capture holds thousands of datagrams and not one
#             16-byte piece of the text.
#   mismatch  a listener with one key; clients with another key and with none: each
#             connect fails (ETIMEDOUT) with a log line naming the cluster key as a
#             cause, the listener logs the refusal with the client's address, and
#             accepts nothing; a client with the right key then transfers verified.
source "$(dirname "$0")/lib.sh"
scenario=${1:?usage: test_keyed.sh capture|mismatch}
command -v python3 >/dev/null || nt_skip "python3 is not installed"

newkey() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }

# A raw capture of UDP payloads on h2's rails (rail_capture.py says what it prints)
CAPTURE=$(dirname "$0")/rail_capture.py

# One transfer of the text file with the capture running: NAME [env...]
captured_transfer() {
	local name=$1 cpid
	shift
	rm -f "$NT_DIR/stop" "$NT_DIR/$name.recv"
	setsid ip netns exec "$(tb_ns 2)" python3 "$CAPTURE" "$NT_DIR/stop" "$NT_DIR/text" r1 r2 \
		>"$NT_DIR/$name.cap" 2>"$NT_DIR/$name.cap.err" &
	cpid=$!
	NT_PIDS+=($cpid)
	for _ in $(seq 50); do grep -qs capturing "$NT_DIR/$name.cap" && break; sleep 0.1; done
	env "$@" RI2N_RAILS="$NT_RAILS" setsid ip netns exec "$(tb_ns 2)" "$NT_XFER" serve --quiet --once \
		--out "$NT_DIR/$name.recv" >"$NT_DIR/$name.srv.out" 2>"$NT_DIR/$name.srv.err" &
	NT_PIDS+=($!)
	local spid=$!
	sleep 0.3
	env "$@" RI2N_RAILS="$NT_RAILS" timeout -s KILL 60 ip netns exec "$(tb_ns 1)" "$NT_XFER" send \
		"$(nt_addr 2)" --file "$NT_DIR/text" >"$NT_DIR/$name.out" 2>"$NT_DIR/$name.err" ||
		nt_fail "$name: the transfer failed: $(cat "$NT_DIR/$name.out")"
	wait "$spid" || nt_fail "$name: the server failed: $(cat "$NT_DIR/$name.srv.err")"
	touch "$NT_DIR/stop"
	wait "$cpid"
	cmp -s "$NT_DIR/text" "$NT_DIR/$name.recv" || nt_fail "$name: the file arrived changed"
	sed -n 's/.*\(frames=[0-9]* bytes=[0-9]* hits=[0-9]*\).*/\1/p' "$NT_DIR/$name.cap"
}

field_of() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }

scenario_capture() {
	local plain keyed b hits
	nt_init kcap 2 2 1gbit
	# 16 MiB of a text anyone would recognise
	python3 -c '
import sys
line = b"ri2n capture check: the quick brown fox jumps over the lazy dog 0123456789\n"
sys.stdout.buffer.write(line * (16 * 1024 * 1024 // len(line)))' >"$NT_DIR/text"
	plain=$(captured_transfer plain)
	nt_note "no key: $plain"
	b=$(field_of bytes "$plain")
	hits=$(field_of hits "$plain")
	[ -n "$b" ] && [ "$b" -gt $((8 << 20)) ] || nt_fail "the control capture saw too little: $plain $(cat "$NT_DIR/plain.cap.err")"
	[ "$hits" -gt 100 ] || nt_fail "the control capture found the text in only $hits frames: the capture does not work"
	keyed=$(captured_transfer keyed RI2N_KEY="$(newkey)")
	nt_note "keyed: $keyed"
	b=$(field_of bytes "$keyed")
	hits=$(field_of hits "$keyed")
	[ -n "$b" ] && [ "$b" -gt $((8 << 20)) ] || nt_fail "the keyed capture saw too little: $keyed"
	[ "$hits" -eq 0 ] || nt_fail "the text is readable in $hits captured keyed frames"
	keyed=$(captured_transfer keyed256 RI2N_KEY="$(newkey)" RI2N_KEY_AES256=1)
	nt_note "keyed, AES-256: $keyed"
	b=$(field_of bytes "$keyed")
	hits=$(field_of hits "$keyed")
	[ -n "$b" ] && [ "$b" -gt $((8 << 20)) ] || nt_fail "the AES-256 capture saw too little: $keyed"
	[ "$hits" -eq 0 ] || nt_fail "the text is readable in $hits captured frames keyed with AES-256"
	nt_ok "capture: 16 MiB of known text arrived intact three times; in clear it showed in $(field_of hits "$plain") captured frames, with a key (AES-128, then AES-256) in none ($b bytes captured the last time)"
}

# A client: NAME KEY(or "") [VAR=VALUE...] -> its output files; returns its status
client() {
	local name=$1 key=$2
	shift 2
	env ${key:+RI2N_KEY=$key} "$@" RI2N_CONNECT_TIMEOUT_MS=1500 RI2N_LOG=info RI2N_RAILS="$NT_RAILS" \
		timeout -s KILL 30 ip netns exec "$(tb_ns 1)" "$NT_XFER" send "$(nt_addr 2)" 1M \
		>"$NT_DIR/$name.out" 2>"$NT_DIR/$name.err"
}

scenario_mismatch() {
	local key other
	nt_init kmis 2 2
	key=$(newkey)
	other=$(newkey)
	RI2N_KEY=$key nt_serve 2 --once
	client other "$other" && nt_fail "a client with another key connected: $(cat "$NT_DIR/other.out")"
	grep -q "cluster key" "$NT_DIR/other.err" ||
		nt_fail "the client with another key failed without naming the key: $(cat "$NT_DIR/other.err")"
	grep -qi "timed out\|ETIMEDOUT\|connect" "$NT_DIR/other.err" "$NT_DIR/other.out" ||
		nt_fail "the client with another key did not say its connect failed"
	sleep 1.1 # the listener warns at most once a second
	client none "" && nt_fail "a client without a key connected: $(cat "$NT_DIR/none.out")"
	grep -q "refused .* the last from $(nt_addr 1):[0-9]*: the client's cluster key differs" "$NT_DIR/serve2.err" ||
		nt_fail "the listener did not log the refused attempts: $(cat "$NT_DIR/serve2.err")"
	[ "$(grep -c "cluster key differs" "$NT_DIR/serve2.err")" -ge 2 ] ||
		nt_fail "the listener logged one refusal, not one for each client: $(cat "$NT_DIR/serve2.err")"
	# the same key sealing another way (integrity only, AES-256): refused at the handshake
	# too, not connected and then silent until the dead-peer timeout
	client authonly "$key" RI2N_KEY_AUTH_ONLY=1 &&
		nt_fail "a client sealing integrity only connected to an encrypting server"
	client aes256 "$key" RI2N_KEY_AES256=1 && nt_fail "an AES-256 client connected to an AES-128 server"
	for c in authonly aes256; do
		grep -q "cluster key" "$NT_DIR/$c.err" ||
			nt_fail "the $c client failed without naming the key: $(cat "$NT_DIR/$c.err")"
	done
	grep -q "$key\|$other" "$NT_DIR"/*.err "$NT_DIR"/*.out && nt_fail "a key appeared in a log"
	# the server is still waiting for its one connection: the right key gets it
	RI2N_KEY=$key nt_send good 1 2 8M || nt_fail "the client with the right key failed: $(cat "$NT_DIR/good.out")"
	nt_require_verified good
	nt_ok "mismatch: another key, no key, and the same key sealing integrity only or with AES-256 refused with a line naming the cluster key; the right key then moved 8 MiB verified"
}

case $scenario in
capture | mismatch) "scenario_$scenario" ;;
*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
