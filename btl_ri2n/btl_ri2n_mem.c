/*
 * btl_ri2n_mem.c - the memory the BTL gives the core: every block counted,
 * grown rings mapped on their own, the ceiling (btl_ri2n_ring_mem_mb) and
 * each peer's share of it.
 */
#include "opal_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "btl_ri2n.h"
#include "rn_log.h"

/*
 * The core's memory: connections, handshakes and the rings, which grow with
 * a peer's traffic and shrink back after 2 s idle (rn_conn.c, rn_timer.c).
 * Every block carries its size in front, so the module knows what it holds
 * (mem_used, mem_peak; btl_ri2n_verbose prints them).  Blocks of 64 KiB and
 * more, grown rings, are mapped on their own: when a ring shrinks its pages
 * go back to the system, not to malloc's heap, so an idle peer costs only
 * its first rings whatever it moved before.
 *
 * The ceiling (btl_ri2n_ring_mem_mb): a block that would take the total past
 * it is refused, except while a connection is set up (mem_setup): a handshake
 * and a connection's first rings, a few tens of KiB, are always granted, so
 * the ceiling never costs a peer.  What it bounds is growth, and the core
 * copes with a refused growth: the send ring stays as it is and the writer
 * waits for ACKs; the receive ring drops what lands past it (counted as
 * "nomem") and the peer sends it again.  Slower, nothing lost.
 */
#define MEM_HDR 16                /* the size, keeping the block 16-byte aligned */
#define MEM_MAP_MIN (64 * 1024)   /* from this size a block has its own mapping */

void *rbtl_core_alloc(void *u, size_t n)
{
	mca_btl_ri2n_module_t *m = u;
	size_t total = n + MEM_HDR;
	uint8_t *p;

	if (m->mem_max && !m->mem_setup && m->mem_used + total > m->mem_max) {
		m->mem_refused++;
		return NULL;
	}
	if (total >= MEM_MAP_MIN) {
		p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
	} else if ((p = calloc(1, total)) == NULL) {
		return NULL;
	}
	memcpy(p, &total, sizeof(total));
	m->mem_used += total;
	if (m->mem_used > m->mem_peak)
		m->mem_peak = m->mem_used;
	return p + MEM_HDR;
}

void rbtl_core_free(void *u, void *ptr)
{
	mca_btl_ri2n_module_t *m = u;
	uint8_t *p = ptr;
	size_t total;

	if (!p)
		return;
	p -= MEM_HDR;
	memcpy(&total, p, sizeof(total));
	m->mem_used -= total;
	if (total >= MEM_MAP_MIN)
		munmap(p, total);
	else
		free(p);
}

void rbtl_mem_warn(mca_btl_ri2n_module_t *m, uint64_t now)
{
	if (m->mem_refused == m->mem_refused_said || now < m->mem_warn_next_ns)
		return;
	rn_warn("btl_ri2n: the rings of this process hold %zu KiB, at the ceiling of %d MiB "
		"(btl_ri2n_ring_mem_mb, RI2N_RING_MEM_MB): %llu ring growth(s) refused; the rings "
		"stay as they are and transfers go on, slower. Raise the ceiling, or lower "
		"btl_ri2n_sndbuf / btl_ri2n_rcvbuf", m->mem_used / 1024,
		mca_btl_ri2n_component.p.ring_mem_mb,
		(unsigned long long)(m->mem_refused - m->mem_refused_said));
	m->mem_refused_said = m->mem_refused;
	m->mem_warn_next_ns = now + UINT64_C(10000000000);
}

/*
 * Every peer's rings may grow to an equal share of the ceiling, so that all
 * of them together fit in it and a window is always backed by memory: a
 * receiver at the ceiling would have to drop what its window let in, and the
 * peer resend it, a slow way to be back-pressured.  The share lowers
 * btl_ri2n_sndbuf / rcvbuf only in jobs with many ranks (256 MiB keeps the
 * default 6 MB send rings up to 21 peers), never below the smallest rings (64
 * packets); past that, or with peers from outside the job, the ceiling
 * itself refuses growth (rbtl_core_alloc).  Every rank computes the same share.
 */
void rbtl_share_ceiling(mca_btl_ri2n_module_t *m)
{
	uint32_t peers = m->job_size > 1 ? m->job_size - 1 : 0;
	/* a packet's payload and what its slot costs besides (marks, FIFOs, lengths) */
	size_t pkt = (size_t)m->cfg.max_dgram + 64, per_ring;
	uint32_t slots = RN_MIN_SLOTS;

	if (!m->mem_max || !peers || !mca_btl_ri2n_component.p.ring_share)
		return;
	per_ring = m->mem_max / peers / 2;
	while (slots < RN_MAX_SLOTS && (size_t)slots * 2 * pkt <= per_ring)
		slots *= 2;
	if (m->cfg.snd_slots > slots)
		m->cfg.snd_slots = slots;
	if (m->cfg.rcv_slots > slots)
		m->cfg.rcv_slots = slots;
	if (m->cfg.init_cwnd > m->cfg.snd_slots)
		m->cfg.init_cwnd = m->cfg.snd_slots;
}

/*
 * The receive windows of all peers share a third of the ceiling (rn_rcvpool,
 * rn_core.h): each peer sending now is offered an equal part of it.  A third:
 * the send rings may take half (the equal share above), and a ring moving to
 * a block half its size holds both for a moment, at most a sixth.  Within a
 * job the pool leaves the default windows (2048 packets of 1448 bytes) whole
 * up to 28 peers sending at once (256 MiB); it holds peers from outside the
 * job to the ceiling too, instead of letting the first few grow their rings
 * while the others drop what their windows let in.  The module's lock covers
 * every connection, so one pool serves them all.  NULL without a ceiling, and
 * with btl_ri2n_ring_share 0 (rings grow until the ceiling refuses).
 */
rn_rcvpool *rbtl_rcvpool(mca_btl_ri2n_module_t *m)
{
	if (!m->mem_max || !mca_btl_ri2n_component.p.ring_share)
		return NULL;
	m->rcvpool = (rn_rcvpool){ .bytes = m->mem_max / 3 };
	return &m->rcvpool;
}
