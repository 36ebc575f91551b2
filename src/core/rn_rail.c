/*
 * rn_rail.c - rail pairing, rail choice, and each rail's congestion state.
 */
#include <string.h>

#include "rn_rail.h"
#include "rn_seq.h"

enum {
	RN_CWND_MIN = 4, /* packets: enough to keep a rail probing after losses */
};

/* 10 s: a path's base RTT is re-learned this often, as routes may change. */
#define RN_MIN_RTT_WINDOW_NS UINT64_C(10000000000)
/* 2 s: the longest RTO; a rail needing longer has failed (dead-peer: 30 s). */
/* 100 ms: RTO before the first RTT sample on a rail. */
#define RN_RTO_INITIAL_NS UINT64_C(100000000)

int rn_rail_same_subnet(uint32_t a, uint32_t b, uint8_t prefix)
{
	uint32_t mask = prefix >= 32 ? UINT32_MAX : ~(UINT32_MAX >> prefix);

	return prefix > 0 && (a & mask) == (b & mask);
}

int rn_rail_match(const rn_rail_addr *local, int nlocal,
		  const rn_rail_addr *remote, int nremote, int pairs[][2])
{
	uint32_t used = 0;
	int n = 0;

	for (int i = 0; i < nlocal; i++) {
		for (int j = 0; j < nremote; j++) {
			uint8_t prefix = local[i].prefix < remote[j].prefix ?
						 local[i].prefix : remote[j].prefix;

			if ((used >> j) & 1)
				continue;
			if (!rn_rail_same_subnet(local[i].ip, remote[j].ip, prefix))
				continue;
			used |= 1u << j;
			pairs[n][0] = i;
			pairs[n][1] = j;
			n++;
			break;
		}
	}
	return n;
}

int rn_rail_choose(uint32_t usable, int nrails, unsigned start)
{
	for (int k = 0; k < nrails; k++) {
		int i = (int)((start + (unsigned)k) % (unsigned)nrails);

		if ((usable >> i) & 1)
			return i;
	}
	return -1;
}

int rn_rail_init(rn_rail *r, const rn_mem *mem, uint32_t fifo_slots, uint32_t init_cwnd)
{
	r->fifo = mem->alloc(mem->user, (size_t)fifo_slots * sizeof(*r->fifo));
	if (!r->fifo)
		return RN_ERR_NOMEM;
	r->fmask = fifo_slots - 1;
	r->fhead = r->ftail = 0;
	r->cwnd = init_cwnd;
	r->startup = 1;
	r->rx_up = r->peer_up = 1;
	r->round_q_ns = UINT64_MAX;
	return 0;
}

void rn_rail_free(rn_rail *r, const rn_mem *mem)
{
	if (r->fifo)
		mem->free(mem->user, r->fifo);
	r->fifo = NULL;
}

int rn_rail_fifo_resize(rn_rail *r, const rn_mem *mem, uint32_t fifo_slots)
{
	rn_txrec *fifo;

	if (fifo_slots == 0 || (fifo_slots & (fifo_slots - 1)) ||
	    fifo_slots < r->ftail - r->fhead)
		return RN_ERR_INVAL;
	if (fifo_slots == r->fmask + 1)
		return 0;
	fifo = mem->alloc(mem->user, (size_t)fifo_slots * sizeof(*fifo));
	if (!fifo)
		return RN_ERR_NOMEM;
	/* entries keep their running positions: only the mask changes */
	for (uint32_t i = r->fhead; i != r->ftail; i++)
		fifo[i & (fifo_slots - 1)] = r->fifo[i & r->fmask];
	mem->free(mem->user, r->fifo);
	r->fifo = fifo;
	r->fmask = fifo_slots - 1;
	return 0;
}

uint32_t rn_rail_on_send(rn_rail *r, uint32_t seq, uint64_t now_ns)
{
	uint32_t idx = r->tx_idx++;

	r->fifo[r->ftail & r->fmask] = (rn_txrec){ .seq = seq, .idx = idx };
	r->ftail++;
	r->inflight++;
	if (r->inflight >= r->cwnd)
		r->cwnd_limited = 1;
	r->last_tx_ns = now_ns;
	return idx;
}

void rn_rail_on_rtt(rn_rail *r, uint64_t rtt, uint64_t now_ns)
{
	/* a packet held longer than the RTO ceiling (a stalled process) says nothing of the path */
	if (rtt > RN_RTO_MAX_NS)
		return;
	if (r->srtt_ns == 0) {
		r->srtt_ns = rtt;
		r->rttvar_ns = rtt / 2;
	} else {
		uint64_t err = rtt > r->srtt_ns ? rtt - r->srtt_ns : r->srtt_ns - rtt;

		r->rttvar_ns = (3 * r->rttvar_ns + err) / 4;
		r->srtt_ns = (7 * r->srtt_ns + rtt) / 8;
	}
	if (r->min_rtt_ns == 0 || rtt <= r->min_rtt_ns ||
	    now_ns - r->min_rtt_stamp > RN_MIN_RTT_WINDOW_NS) {
		r->min_rtt_ns = rtt;
		r->min_rtt_stamp = now_ns;
	}
	r->rto_backoff = 0;
}

void rn_rail_on_owd(rn_rail *r, uint32_t owd_us, const rn_config *cfg, uint64_t now_ns)
{
	uint64_t q;

	if (!r->owd_valid || (int32_t)(owd_us - r->owd_min) < 0 ||
	    now_ns - r->owd_stamp > RN_MIN_RTT_WINDOW_NS) {
		r->owd_min = owd_us;
		r->owd_stamp = now_ns;
		r->owd_valid = 1;
	}
	q = (uint64_t)(uint32_t)(owd_us - r->owd_min) * 1000;
	r->latest_q_ns = q;
	if (q > cfg->queue_target_ns / 2)
		r->startup = 0; /* stop doubling at the first sign of a queue */
	if (q < r->round_q_ns)
		r->round_q_ns = q;
}

/*
 * Once per round trip: grow while the rail's queue stays under the target
 * (doubling until the first sign of queueing, then +1/8 per round), shrink
 * in proportion when it goes over.  The window thus tracks what the rail
 * delivers within about queue_target, which is what keeps a slow rail from
 * holding back the whole stream at the receiver.
 */
static void end_round(rn_rail *r, const rn_config *cfg, uint32_t max_cwnd)
{
	uint64_t target = cfg->queue_target_ns;

	if (r->round_q_ns != UINT64_MAX && r->round_q_ns > target) {
		uint64_t q = r->round_q_ns;
		/* scale by target/queue, never below half */
		uint64_t c = (uint64_t)r->cwnd * target / q;

		if (c < r->cwnd / 2)
			c = r->cwnd / 2;
		r->cwnd = c < RN_CWND_MIN ? RN_CWND_MIN : (uint32_t)c;
		r->startup = 0;
	} else if (r->cwnd_limited && r->round_q_ns != UINT64_MAX) {
		/* grow only on evidence: a delay sample this round said no queue */
		uint32_t inc = r->startup ? r->cwnd : (r->cwnd / 8 ? r->cwnd / 8 : 1);

		r->cwnd = r->cwnd + inc > max_cwnd ? max_cwnd : r->cwnd + inc;
	}
	r->round_end = r->tx_idx;
	r->round_q_ns = UINT64_MAX;
	r->cwnd_limited = r->inflight >= r->cwnd;
}

void rn_rail_on_acked(rn_rail *r, uint32_t idx, const rn_config *cfg, uint32_t max_cwnd,
		      uint64_t now_ns)
{
	r->last_ack_ns = now_ns;
	if (r->inflight)
		r->inflight--;
	if (rn_seq_ge(idx, r->acked_idx))
		r->acked_idx = idx + 1;
	if (rn_seq_ge(idx, r->round_end))
		end_round(r, cfg, max_cwnd);
}

void rn_rail_on_lost(rn_rail *r, uint32_t idx, const rn_config *cfg)
{
	if (r->inflight)
		r->inflight--;
	r->st.lost++;
	if (rn_seq_lt(idx, r->recover_idx))
		return; /* same loss event */
	if (r->latest_q_ns < cfg->queue_target_ns / 2)
		return; /* no queue: not congestion */
	r->recover_idx = r->tx_idx;
	r->cwnd = r->cwnd * 7 / 10;
	if (r->cwnd < RN_CWND_MIN)
		r->cwnd = RN_CWND_MIN;
	r->startup = 0;
}

uint64_t rn_rail_rto(const rn_rail *r, const rn_config *cfg)
{
	uint64_t rto = r->srtt_ns ? r->srtt_ns + 4 * r->rttvar_ns : RN_RTO_INITIAL_NS;

	if (rto < cfg->rto_min_ns)
		rto = cfg->rto_min_ns;
	rto <<= r->rto_backoff < 6 ? r->rto_backoff : 6;
	/* a rail silent this long is the failure detector's business, not a wait */
	return rto > RN_RTO_MAX_NS ? RN_RTO_MAX_NS : rto;
}
