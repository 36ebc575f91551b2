/*
 * rn_config.c - defaults and checks for every knob, and the names of codes.
 * docs/CONFIG.md lists the same defaults with their environment variables.
 */
#include "rn_core.h"

#define MS UINT64_C(1000000)

void rn_config_default(rn_config *c)
{
	*c = (rn_config){
		.max_dgram = 1472,        /* MTU 1500 - IPv4 20 - UDP 8 */
		.snd_slots = 2048,        /* ~3 MB at 1448 bytes a packet */
		.rcv_slots = 2048,
		.fail_window = 100,       /* the paper's N */
		.fail_min = 2,            /* the paper's M */
		.ack_every = 8,
		.ack_delay_ns = 200000,   /* 200 us */
		.ack_delay_pp_ns = 10 * MS, /* the answer usually carries it first; at most rto_min / 2 */
		.heartbeat_ns = 100 * MS, /* the paper used 3 s */
		.keepalive_ns = 100 * MS,
		.rail_timeout_ns = 350 * MS,
		.dead_peer_ns = 30000 * MS,
		.connect_timeout_ns = 30000 * MS,
		.rto_min_ns = 20 * MS,
		.queue_target_ns = 4 * MS,
		.linger_ns = 1000 * MS,
		.init_cwnd = 32,
	};
}

static int pow2_in(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

int rn_config_check(const rn_config *c, const char **why)
{
	const char *bad = NULL;

	if (c->max_dgram < RN_MIN_DGRAM || c->max_dgram > RN_MAX_DGRAM)
		bad = "max_dgram must be between 256 and 65507 bytes";
	else if (!pow2_in(c->snd_slots, RN_MIN_SLOTS, RN_MAX_SLOTS))
		bad = "snd_slots must be a power of two between 64 and 65536";
	else if (!pow2_in(c->rcv_slots, RN_MIN_SLOTS, RN_MAX_SLOTS))
		bad = "rcv_slots must be a power of two between 64 and 65536";
	else if (c->fail_window < 2 || c->fail_window > 100000)
		bad = "fail_window must be between 2 and 100000 packets";
	else if (c->fail_min < 1 || c->fail_min >= c->fail_window)
		bad = "fail_min must be at least 1 and below fail_window";
	else if (c->ack_every < 1 || c->ack_every > 1024)
		bad = "ack_every must be between 1 and 1024 packets";
	else if (c->heartbeat_ns < MS || c->keepalive_ns < MS)
		bad = "heartbeat and keepalive periods must be at least 1 ms";
	else if (c->rail_timeout_ns <= c->keepalive_ns)
		bad = "rail_timeout must be longer than the keepalive period";
	else if (c->dead_peer_ns <= c->rail_timeout_ns)
		bad = "dead_peer timeout must be longer than rail_timeout";
	else if (c->connect_timeout_ns < MS)
		bad = "connect timeout must be at least 1 ms";
	else if (c->rto_min_ns < 100000)
		bad = "rto_min must be at least 100 us";
	else if (c->ack_delay_pp_ns < c->ack_delay_ns)
		bad = "ack_delay_pp must be at least ack_delay";
	else if (c->init_cwnd < 4 || c->init_cwnd > c->snd_slots)
		bad = "init_cwnd must be between 4 and snd_slots";
	else if (c->keyed > 1)
		bad = "keyed must be 0 or 1";
	else if (c->auth_only > 1)
		bad = "auth_only must be 0 or 1";
	else if (c->keyed && c->max_dgram < RN_INIT_LEN + RN_MAC_LEN)
		bad = "with a key, max_dgram must be at least 272 bytes";
	if (why)
		*why = bad;
	return bad ? RN_ERR_INVAL : 0;
}

const char *rn_strerror(int err)
{
#define RN_ERR_SENTENCE(code, value, errno_, sentence) \
	case code: return sentence;
	switch (err) {
	RN_ERR_LIST(RN_ERR_SENTENCE)
	default: return "unknown error";
	}
#undef RN_ERR_SENTENCE
}

int rn_errno(int err)
{
#define RN_ERR_ERRNO(code, value, errno_, sentence) \
	case code: return errno_;
	switch (err) {
	RN_ERR_LIST(RN_ERR_ERRNO)
	default: return ECONNRESET;
	}
#undef RN_ERR_ERRNO
}

const char *rn_drop_name(rn_drop d)
{
	static const char *const names[RN_DROP__COUNT] = {
		"malformed", "version", "type", "unknown_conn", "source",
		"window", "duplicate", "cookie", "state", "auth", "rate", "nomem", "replay",
	};

	return (unsigned)d < RN_DROP__COUNT ? names[d] : "?";
}

const char *rn_cause_name(rn_cause c)
{
	switch (c) {
	case RN_CAUSE_NONE: return "none";
	case RN_CAUSE_RX_COUNT: return "receive count below threshold";
	case RN_CAUSE_RX_SILENCE: return "nothing received";
	case RN_CAUSE_RX_SEEN: return "packets arrive again";
	case RN_CAUSE_PEER: return "peer report";
	case RN_CAUSE_LOCAL: return "local send error";
	case RN_CAUSE_RX_SIZE: return "MTU black hole: full-size datagrams lost";
	default: return "?";
	}
}

const char *rn_state_name(int st)
{
	switch (st) {
	case RN_ST_INIT_SENT: return "init-sent";
	case RN_ST_COOKIE_SENT: return "cookie-sent";
	case RN_ST_ESTABLISHED: return "established";
	case RN_ST_LINGER: return "linger";
	case RN_ST_CLOSED: return "closed";
	default: return "?";
	}
}
