/*
 * abi_layout.c - prints the layout of ri2n.h's public structs, one line per
 * field ("struct.field offset size"), for tests/check_abi.sh to compare with
 * tests/abi/layout.txt.  The structs may grow at their end only (ri2n_stats_sz,
 * ri2n_read_event_sz): a field moved, resized or inserted changes a line.
 * A field added at the end is a new line here and in layout.txt.  The
 * constants a program compiles in (options, event types, log levels) too.
 */
#include <stddef.h>
#include <stdio.h>

#include "ri2n.h"

#define F(s, f) printf("%s.%s %zu %zu\n", #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f))

#define C(name) printf("%s %lld\n", #name, (long long)(name))

static void constants(void)
{
	C(RI2N_SOL);
	C(RI2N_MAX_RAILS);
	C(RI2N_HEARTBEAT_MS);
	C(RI2N_KEEPALIVE_MS);
	C(RI2N_RAIL_TIMEOUT_MS);
	C(RI2N_DEAD_PEER_MS);
	C(RI2N_CONNECT_TIMEOUT_MS);
	C(RI2N_FAIL_WINDOW);
	C(RI2N_FAIL_MIN);
	C(RI2N_MTU);
	C(RI2N_SNDBUF);
	C(RI2N_RCVBUF);
	C(RI2N_KEY);
	C(RI2N_BUSY_POLL_US);
	C(RI2N_KEY_AUTH_ONLY);
	C(RI2N_KEY_AES256);
	C(RI2N_REDUNDANT_BYTES);
	C(RI2N_EVENT_CONNECTED);
	C(RI2N_EVENT_RAIL_DOWN);
	C(RI2N_EVENT_RAIL_UP);
	C(RI2N_EVENT_CLOSED);
	C(RI2N_EVENT_FAILED);
	C(RI2N_LOG_DEBUG);
	C(RI2N_LOG_INFO);
	C(RI2N_LOG_WARN);
	C(RI2N_LOG_ERROR);
	C(RI2N_LOG_OFF);
}

static void rail_stats(void)
{
	F(ri2n_rail_stats, local);
	F(ri2n_rail_stats, remote);
	F(ri2n_rail_stats, up);
	F(ri2n_rail_stats, rx_up);
	F(ri2n_rail_stats, tx_up);
	F(ri2n_rail_stats, last_change_ns);
	F(ri2n_rail_stats, last_cause);
	F(ri2n_rail_stats, down_events);
	F(ri2n_rail_stats, up_events);
	F(ri2n_rail_stats, tx_packets);
	F(ri2n_rail_stats, tx_bytes);
	F(ri2n_rail_stats, rx_packets);
	F(ri2n_rail_stats, rx_bytes);
	F(ri2n_rail_stats, tx_data);
	F(ri2n_rail_stats, rx_data);
	F(ri2n_rail_stats, retransmits);
	F(ri2n_rail_stats, lost);
	F(ri2n_rail_stats, heartbeats);
	F(ri2n_rail_stats, keepalives);
	F(ri2n_rail_stats, cwnd);
	F(ri2n_rail_stats, inflight);
	F(ri2n_rail_stats, srtt_ns);
	F(ri2n_rail_stats, dgram);
	F(ri2n_rail_stats, mtu_holes);
	F(ri2n_rail_stats, small_ok);
	/* an element of ri2n_stats.rail[]: its size is fixed for good */
	printf("sizeof(ri2n_rail_stats) %zu\n", sizeof(struct ri2n_rail_stats));
}

static void stats(void)
{
	F(ri2n_stats, state);
	F(ri2n_stats, error);
	F(ri2n_stats, established_ns);
	F(ri2n_stats, app_tx_bytes);
	F(ri2n_stats, app_rx_bytes);
	F(ri2n_stats, tx_packets);
	F(ri2n_stats, rx_packets);
	F(ri2n_stats, retransmits);
	F(ri2n_stats, rto_events);
	F(ri2n_stats, dup_data);
	F(ri2n_stats, drops_malformed);
	F(ri2n_stats, drops_source);
	F(ri2n_stats, drops_window);
	F(ri2n_stats, drops_duplicate);
	F(ri2n_stats, drops_other);
	F(ri2n_stats, mss);
	F(ri2n_stats, nrails);
	F(ri2n_stats, rail);
	F(ri2n_stats, copies);
	F(ri2n_stats, rail6);
	printf("RI2N_STATS_SIZE_V1 %zu\n", (size_t)RI2N_STATS_SIZE_V1);
}

static void event(void)
{
	F(ri2n_event, type);
	F(ri2n_event, fd);
	F(ri2n_event, rail);
	F(ri2n_event, error);
	F(ri2n_event, time_ns);
	F(ri2n_event, peer);
	F(ri2n_event, local_rail);
	F(ri2n_event, remote_rail);
	F(ri2n_event, cause);
	F(ri2n_event, missed);
	F(ri2n_event, peer6);
	F(ri2n_event, local_rail6);
	F(ri2n_event, remote_rail6);
	printf("RI2N_EVENT_SIZE_V1 %zu\n", (size_t)RI2N_EVENT_SIZE_V1);
}

int main(void)
{
	constants();
	rail_stats();
	stats();
	event();
	return 0;
}
