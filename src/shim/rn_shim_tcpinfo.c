/*
 * rn_shim_tcpinfo.c - TCP_INFO for a ri2n socket, so that programs that
 * report it (iperf3's retransmissions, RTT and congestion window columns)
 * show ri2n's figures: per-connection counters and, summed or taken over
 * the rails that are up, the rails' windows and round-trip times.
 *
 * The kernel's struct tcp_info (linux/tcp.h), not glibc's shorter one: the
 * program gets min(its length, ours) bytes, as from the kernel.  Fields ri2n
 * has no counterpart for stay 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/tcp.h>
#include <string.h>

#include "ri2n.h"
#include "rn_shim.h"

/* tcpi_state values (the kernel's enum, not in its uapi headers) */
enum { ST_ESTABLISHED = 1, ST_SYN_SENT = 2, ST_CLOSE = 7, ST_LISTEN = 10 };

static void fill_rails(struct tcp_info *ti, const struct ri2n_stats *st)
{
	uint64_t rtt = 0, data_out = 0, data_in = 0;
	uint32_t cwnd = 0, inflight = 0;

	for (int k = 0; k < st->nrails && k < RI2N_MAX_RAILS; k++) {
		const struct ri2n_rail_stats *r = &st->rail[k];

		data_out += r->tx_data;
		data_in += r->rx_data;
		if (!r->up)
			continue;
		cwnd += r->cwnd;
		inflight += r->inflight;
		if (r->srtt_ns && (!rtt || r->srtt_ns < rtt))
			rtt = r->srtt_ns;
	}
	ti->tcpi_rtt = (uint32_t)(rtt / 1000);
	ti->tcpi_rttvar = ti->tcpi_rtt / 4; /* ri2n keeps no variance: a quarter, as at RTT's start */
	ti->tcpi_min_rtt = ti->tcpi_rtt;
	ti->tcpi_rto = 200000 + 4 * ti->tcpi_rtt;
	ti->tcpi_snd_cwnd = cwnd;
	ti->tcpi_unacked = inflight;
	ti->tcpi_data_segs_out = (uint32_t)data_out;
	ti->tcpi_data_segs_in = (uint32_t)data_in;
}

int rn_shim_tcpinfo(int fd, const rn_shim_ent *e, void *val, socklen_t *len)
{
	struct tcp_info ti;
	struct ri2n_stats st;
	int mtu = 0;
	socklen_t ml = sizeof(mtu), n;

	if (!val || !len) {
		errno = EFAULT;
		return -1;
	}
	memset(&ti, 0, sizeof(ti));
	ti.tcpi_state = e->listening ? ST_LISTEN : ST_ESTABLISHED;
	ti.tcpi_snd_ssthresh = 0x7fffffff; /* TCP_INFINITE_SSTHRESH: no slow start here */
	if (!e->listening && ri2n_stats(fd, &st) == 0) {
		if (strcmp(st.state, "established") != 0)
			ti.tcpi_state = st.error || !strcmp(st.state, "closed") ? ST_CLOSE :
					!strcmp(st.state, "init-sent") ? ST_SYN_SENT : ST_ESTABLISHED;
		/* cookie-sent: the connect returned (the listener answered), as TCP's after its SYN-ACK */
		ti.tcpi_snd_mss = ti.tcpi_rcv_mss = ti.tcpi_advmss = st.mss;
		ti.tcpi_total_retrans = (uint32_t)st.retransmits;
		ti.tcpi_bytes_acked = st.app_tx_bytes;
		ti.tcpi_bytes_sent = st.app_tx_bytes;
		ti.tcpi_bytes_received = st.app_rx_bytes;
		ti.tcpi_bytes_retrans = st.retransmits * st.mss;
		ti.tcpi_segs_out = (uint32_t)st.tx_packets;
		ti.tcpi_segs_in = (uint32_t)st.rx_packets;
		fill_rails(&ti, &st);
	}
	if (ri2n_getsockopt(fd, RI2N_SOL, RI2N_MTU, &mtu, &ml) == 0)
		ti.tcpi_pmtu = (uint32_t)mtu;
	n = *len < (socklen_t)sizeof(ti) ? *len : (socklen_t)sizeof(ti);
	memcpy(val, &ti, n);
	*len = n;
	return 0;
}
