/*
 * rn_rail.c - rail pairing, rail choice, and each rail's congestion state.
 */
#include <string.h>

#include "rn_rail.h"
#include "rn_seq.h"

enum {
	RN_CWND_MIN = 4, /* packets: enough to keep a rail probing after losses */
	RN_CWND_AI = 2,  /* packets per round: the additive increase near the target */
	RN_CWND_DRAIN = 2, /* packets: the window while draining (each flow's leftover queue) */
	RN_Q_SAMPLES = 4,  /* a round is judged on the least of its first 4 queue samples */
};

/* 10 s: a path's base RTT is re-learned this often, as routes may change. */
#define RN_MIN_RTT_WINDOW_NS UINT64_C(10000000000)
/* 100 ms: RTO before the first RTT sample on a rail. */
#define RN_RTO_INITIAL_NS UINT64_C(100000000)
/*
 * 500 ms between drains while the peer's clock is unknown: each costs about
 * two round trips at the least window (a few ms on a LAN with the queue at
 * its target), and a flow that came late to a shared queue mistakes that
 * queue for its floor until a drain finds it lower (drain_step).
 */
#define RN_DRAIN_PERIOD_NS UINT64_C(500000000)
/* Drains follow the peer's clock: one per 2^19 us (524 ms) of it. */
#define RN_DRAIN_EPOCH_SHIFT 19

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
			if ((used >> j) & 1)
				continue;
			if (!rn_addr_rails_share(&local[i], &remote[j]))
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

/* Whether rail a makes a better copy rail than rail b (see rn_rail.h). */
static int better_copy(const rn_rail *a, const rn_rail *b)
{
	if (a->rx_up != b->rx_up)
		return a->rx_up; /* working both ways: its loss is likelier to be the other's */
	if ((a->srtt_ns == 0) != (b->srtt_ns == 0))
		return a->srtt_ns != 0; /* measured beats unknown */
	return a->srtt_ns < b->srtt_ns;
}

int rn_rail_choose_copy(const rn_rail *rails, int nrails, uint32_t usable, int primary)
{
	int best = -1;

	for (int i = 0; i < nrails; i++) {
		if (i == primary || !((usable >> i) & 1))
			continue;
		if (best < 0 || better_copy(&rails[i], &rails[best]))
			best = i;
	}
	return best;
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

	if (!r->owd_valid || (int32_t)(owd_us - r->owd_min) < 0) {
		r->owd_min = owd_us;
		r->owd_stamp = now_ns;
		r->owd_valid = 1;
	}
	if (r->drain == RN_DRAIN_MEASURE &&
	    (!r->drain_owd_valid || (int32_t)(owd_us - r->drain_owd) < 0)) {
		r->drain_owd = owd_us;
		r->drain_owd_valid = 1;
	}
	q = (uint64_t)(uint32_t)(owd_us - r->owd_min) * 1000;
	r->latest_q_ns = q;
	if (q > cfg->queue_target_ns / 2)
		r->startup = 0; /* stop doubling at the first sign of a queue */
	/* the least of the round's first RN_Q_SAMPLES: as many for a small flow as for a large one */
	if (r->round_q_n < RN_Q_SAMPLES && (r->round_q_n == 0 || q < r->round_q_ns))
		r->round_q_ns = q;
	r->round_q_n++;
}

/*
 * Whether a drain is due: once per period of the peer's clock (its arrival
 * times, echoed in every ACK: 2^19 us, 524 ms), so that every flow into the
 * same receiver drains in the same round trips and the shared queue
 * empties.  Alone, each would find the others' queue under it.  Without
 * the peer's clock yet, RN_DRAIN_PERIOD_NS of ours.  No drain in the first
 * period: a short transfer pays for none, and a late-comer's first one is
 * its elders'.
 */
static int drain_due(rn_rail *r, uint64_t now_ns)
{
	uint32_t epoch = r->peer_clock_us >> RN_DRAIN_EPOCH_SHIFT;

	if (r->drain_next_ns == 0) {
		r->drain_next_ns = now_ns + RN_DRAIN_PERIOD_NS;
		r->drain_epoch = epoch;
		return 0;
	}
	if (!r->peer_clock_valid)
		return now_ns >= r->drain_next_ns;
	if (epoch == r->drain_epoch)
		return 0;
	r->drain_epoch = epoch;
	return 1;
}

/*
 * The drain, once per period (drain_due) while the rail is window-limited:
 * the window falls to RN_CWND_DRAIN until every packet sent before is
 * acknowledged (this flow's own queue is gone), then one more round takes
 * the least one-way delay, which becomes the floor when it is lower (or
 * when the floor is older than RN_MIN_RTT_WINDOW_NS: clocks drift, routes
 * change).  A flow that starts while others hold a queue at the bottleneck
 * takes their queue for its floor, sees less queue than they do and takes
 * their share; when every flow drains at once the queue empties and each
 * learns the true floor.  Then the window goes straight back to what it
 * was (less what losses took meanwhile).  Returns 1 while a drain holds
 * the window.
 */
static int drain_step(rn_rail *r, uint64_t now_ns)
{
	switch (r->drain) {
	case RN_DRAIN_EMPTY:
		r->drain = RN_DRAIN_MEASURE;
		r->drain_owd_valid = 0;
		return 1;
	case RN_DRAIN_MEASURE:
		if (r->drain_owd_valid &&
		    ((int32_t)(r->drain_owd - r->owd_min) <= 0 ||
		     now_ns - r->owd_stamp > RN_MIN_RTT_WINDOW_NS)) {
			r->owd_min = r->drain_owd;
			r->owd_stamp = now_ns;
		}
		r->drain = RN_DRAIN_OFF;
		r->drain_next_ns = now_ns + RN_DRAIN_PERIOD_NS;
		/* straight back: growing again from the least window would hand its share away */
		if (r->cwnd < r->drain_saved)
			r->cwnd = r->drain_saved;
		return 1;
	default:
		break;
	}
	if (!drain_due(r, now_ns) || !r->cwnd_limited)
		return 0;
	r->drain = RN_DRAIN_EMPTY;
	r->drain_saved = r->cwnd;
	if (r->cwnd > RN_CWND_DRAIN)
		r->cwnd = RN_CWND_DRAIN;
	return 1;
}

/*
 * The queue over which this round shrinks the window: somewhere between
 * half the target and the target, drawn afresh each round from the round's
 * first transmission index (the core has no randomness of its own; indexes
 * differ between flows and rounds).  With one fixed threshold, a flow whose
 * delay floor is off by a tenth of a millisecond (a drain that still found
 * others' packets queued) never crosses it while the others always do, and
 * starves them; with a threshold spread over half the target, being off by
 * e only makes shrinking less likely by about e / (target / 2).
 */
static uint64_t dithered(const rn_rail *r, uint64_t target)
{
	uint32_t h = r->round_end * UINT32_C(2654435761); /* Knuth's multiplicative hash */

	return target / 2 + (target / 2) * (h >> 24) / 256;
}

/*
 * Once per round trip: additive increase, multiplicative decrease on the
 * rail's queueing delay.  While no queue shows the window doubles per round
 * (startup); then it grows by RN_CWND_AI packets per round while
 * window-limited and the queue is under the round's threshold (dithered;
 * an eighth per round while the queue is under a quarter of the target:
 * room nobody uses), and shrinks to 7/8, and by target/queue more over the
 * target (never below half), when it is over.  The round's queue is the least of
 * its first RN_Q_SAMPLES samples: the least, because a sample is only ever
 * late by noise (a receiver held off the CPU stamps arrivals late), never
 * early; of a fixed number, because a flow with a larger window gets more
 * samples per round, the least of many is lower than the least of few, and
 * over all samples the larger flow would shrink less often than the others
 * at the same queue and grow away from them.
 */
static void end_round(rn_rail *r, const rn_config *cfg, uint32_t max_cwnd, uint64_t now_ns)
{
	uint64_t target = cfg->queue_target_ns;
	uint64_t q = r->round_q_n ? r->round_q_ns : 0;

	if (drain_step(r, now_ns)) {
		/* a round of its own: what the window does now is the drain's */
	} else if (r->dec_hold) {
		/* this round's samples were of packets sent before the last decrease */
		r->dec_hold = 0;
	} else if (r->round_q_n && q > dithered(r, target)) {
		/* 7/8, and target/queue more over the target: rounded, never below half */
		uint64_t over = q > target ? q : target;
		uint64_t c = ((uint64_t)r->cwnd * target * 7 + over * 4) / (over * 8);

		if (c < r->cwnd / 2)
			c = r->cwnd / 2;
		r->cwnd = c < RN_CWND_MIN ? RN_CWND_MIN : (uint32_t)c;
		r->startup = 0;
		r->dec_hold = 1;
	} else if (r->cwnd_limited && r->round_q_n) {
		/* grow only on evidence: the delay samples of this round said no queue */
		uint32_t inc = RN_CWND_AI;

		if (r->startup)
			inc = r->cwnd;
		else if (q < target / 4 && r->cwnd / 8 > inc)
			inc = r->cwnd / 8;
		r->cwnd = r->cwnd + inc > max_cwnd ? max_cwnd : r->cwnd + inc;
	}
	r->round_end = r->tx_idx;
	r->round_q_n = 0;
	r->cwnd_limited = r->inflight >= r->cwnd;
}

void rn_rail_on_acked(rn_rail *r, uint32_t idx, const rn_config *cfg, uint32_t max_cwnd,
		      uint64_t now_ns)
{
	r->last_ack_ns = now_ns;
	r->stalled = 0;
	if (r->inflight)
		r->inflight--;
	if (rn_seq_ge(idx, r->acked_idx))
		r->acked_idx = idx + 1;
	if (rn_seq_ge(idx, r->round_end))
		end_round(r, cfg, max_cwnd, now_ns);
}

void rn_rail_on_lost(rn_rail *r, uint32_t idx, const rn_config *cfg)
{
	uint32_t *w = r->drain ? &r->drain_saved : &r->cwnd;

	if (r->inflight)
		r->inflight--;
	r->st.lost++;
	if (rn_seq_lt(idx, r->recover_idx))
		return; /* same loss event */
	if (r->latest_q_ns < cfg->queue_target_ns / 2)
		return; /* no queue: not congestion */
	r->recover_idx = r->tx_idx;
	*w = *w * 7 / 10;
	if (*w < RN_CWND_MIN)
		*w = RN_CWND_MIN;
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
