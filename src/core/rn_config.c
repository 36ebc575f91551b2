/*
 * rn_config.c - defaults and checks for every knob (from rn_knob_list.h),
 * and the names of codes.
 */
#include "rn_core.h"

#define MS UINT64_C(1000000)
#define US UINT64_C(1000)

/* A knob's default in its field's unit (rn_knob_list.h: the default is in the user's). */
#define DEF_MS(v) ((uint64_t)(v) * MS)
#define DEF_US(v) ((uint64_t)(v) * US)
#define DEF_COUNT(v) (v)
#define DEF_MTU(v) ((v) - 28 > RN_MAX_DGRAM ? RN_MAX_DGRAM : (v) - 28)
#define DEF_BYTES(v) 0 /* slots, once max_dgram is known: SLOTS_BYTES */
#define SLOTS_MS(field, v)
#define SLOTS_COUNT(field, v)
#define SLOTS_MTU(field, v)
#define SLOTS_BYTES(field, v) c->field = rn_config_slots(v, c->max_dgram);

uint32_t rn_config_slots(uint64_t bytes, uint32_t max_dgram)
{
	uint64_t mss = max_dgram > RN_HDR_LEN ? max_dgram - RN_HDR_LEN : 1;
	uint64_t want = (bytes + mss - 1) / mss;
	uint32_t s = RN_MIN_SLOTS;

	while (s < want && s < RN_MAX_SLOTS)
		s <<= 1;
	return s;
}

void rn_config_default(rn_config *c)
{
#define KNOB_DEF(NAME, field, kind, def, lo, hi, mca, doc) .field = DEF_##kind(def),
#define CONFIG_DEF(field, kind, def, lo, hi, doc) .field = DEF_##kind(def),
	*c = (rn_config){ RN_KNOB_LIST(KNOB_DEF) RN_CONFIG_LIST(CONFIG_DEF) };
#undef KNOB_DEF
#undef CONFIG_DEF
#define BYTES_DEF(NAME, field, kind, def, lo, hi, mca, doc) SLOTS_##kind(field, def)
	RN_KNOB_LIST(BYTES_DEF)
#undef BYTES_DEF
}

/* One field's bounds, in the field's unit, and the sentence when it is out of them. */
typedef struct field_rule {
	size_t off;
	uint8_t wide;  /* uint64_t field, else uint32_t */
	uint8_t pow2;  /* must also be a power of two */
	uint64_t lo, hi;
	const char *why;
} field_rule;

#define RULE_MS(field, lo, hi, name) \
	{ offsetof(rn_config, field), 1, 0, (lo) * MS, (hi) * MS, name " must be from " #lo " to " #hi " ms" },
#define RULE_US(field, lo, hi, name) \
	{ offsetof(rn_config, field), 1, 0, (lo) * US, (hi) * US, name " must be from " #lo " to " #hi " us" },
#define RULE_COUNT(field, lo, hi, name) \
	{ offsetof(rn_config, field), 0, 0, lo, hi, name " must be from " #lo " to " #hi },
/* the user's MTU bounds are checked where an MTU becomes max_dgram (rn_knobs.c) */
#define RULE_MTU(field, lo, hi, name) \
	{ offsetof(rn_config, field), 0, 0, RN_MIN_DGRAM, RN_MAX_DGRAM, \
	  #field " must be between 256 and 65507 bytes" },
#define RULE_BYTES(field, lo, hi, name) \
	{ offsetof(rn_config, field), 0, 1, RN_MIN_SLOTS, RN_MAX_SLOTS, \
	  #field " must be a power of two between 64 and 65536" },
#define KNOB_RULE(NAME, field, kind, def, lo, hi, mca, doc) RULE_##kind(field, lo, hi, mca)
#define CONFIG_RULE(field, kind, def, lo, hi, doc) RULE_##kind(field, lo, hi, #field)

static const field_rule rules[] = { RN_KNOB_LIST(KNOB_RULE) RN_CONFIG_LIST(CONFIG_RULE) };

static const char *check_bounds(const rn_config *c)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(*rules); i++) {
		const field_rule *r = &rules[i];
		const char *f = (const char *)c + r->off;
		uint64_t v = r->wide ? *(const uint64_t *)(const void *)f
				     : *(const uint32_t *)(const void *)f;

		if (v < r->lo || v > r->hi || (r->pow2 && (v & (v - 1)) != 0))
			return r->why;
	}
	return NULL;
}

/* The rules between knobs, after each is within its bounds. */
static const char *check_relations(const rn_config *c)
{
	if (c->fail_min >= c->fail_window)
		return "fail_min must be at least 1 and below fail_window";
	if (c->rail_timeout_ns <= c->keepalive_ns)
		return "rail_timeout must be longer than the keepalive period";
	if (c->dead_peer_ns <= c->rail_timeout_ns)
		return "dead_peer timeout must be longer than rail_timeout";
	if (c->ack_delay_pp_ns < c->ack_delay_ns)
		return "ack_delay_pp must be at least ack_delay";
	if (c->ack_hold_max_ns < c->ack_delay_pp_ns)
		return "ack_hold_max must be at least ack_delay_pp";
	if (c->init_cwnd > c->snd_slots)
		return "init_cwnd must be between 4 and snd_slots";
	if (c->keyed > 1)
		return "keyed must be 0 or 1";
	if (c->keyed && c->max_dgram < RN_INIT_LEN + RN_MAC_LEN)
		return "with a key, max_dgram must be at least 272 bytes";
	return NULL;
}

int rn_config_check(const rn_config *c, const char **why)
{
	const char *bad = check_bounds(c);

	if (!bad)
		bad = check_relations(c);
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
	case RN_CAUSE_SHARED: return "another connection to the peer";
	case RN_CAUSE_ADDR_GONE: return "address removed";
	case RN_CAUSE_LINK_DOWN: return "link down";
	case RN_CAUSE_ADDR_BACK: return "address back";
	case RN_CAUSE_RAIL_NEW: return "new rail";
	case RN_CAUSE_ADDR_NEW: return "address changed";
	case RN_CAUSE_LINK_UP: return "link up";
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

uint32_t rn_config_rcv_share(const rn_rcvpool *p, uint32_t rcv_slots, uint32_t pkt_bytes,
			     uint32_t others)
{
	uint32_t w = rcv_slots, floor;
	uint64_t fit;

	if (!p || !p->bytes || !pkt_bytes)
		return w;
	floor = p->floor_slots > RN_MIN_SLOTS ? p->floor_slots : RN_MIN_SLOTS;
	fit = p->bytes / ((uint64_t)others + 1) / pkt_bytes;
	while (w > floor && w > fit)
		w /= 2;
	return w;
}
