/*
 * btl_ri2n_component.c - the MCA component: registration, init, the
 * progress function MPI polls, and the keeper thread.
 *
 * Progress is where the protocol runs: every call reads what the rail
 * sockets have, fires due timers, hands complete frames to the PML, moves
 * queued fragments into the stream and sends what the core has to send.
 * No thread hop and no socketpair sit between MPI and the core.
 *
 * The keeper covers the time MPI does not poll.  An application computing
 * for minutes between MPI calls would otherwise go silent: its peers would
 * fail every rail after rail_timeout and, after dead_peer, report it dead.
 * Every keeper_ms the keeper looks at when progress last ran; if MPI has
 * not polled for two periods it takes the lock (trylock: never delays MPI)
 * and runs a pass that receives, answers, keeps alive and sends, but never
 * calls the PML (no delivery, no completions): those wait for MPI's next
 * poll.  Fatal errors it finds go to the PML's error callback at once, so a
 * dead peer aborts a computing job too.
 */
#include "opal_config.h"

#include <stdlib.h>
#include <string.h>

#include "btl_ri2n.h"
#include "btl_ri2n_frag.h"

static int rbtl_component_register(void);
static int rbtl_component_open(void);
static int rbtl_component_close(void);
static mca_btl_base_module_t **rbtl_component_init(int *num_btls, bool progress_threads,
						   bool mpi_threads);
static int rbtl_component_progress(void);

mca_btl_ri2n_component_t mca_btl_ri2n_component = {
	.super = {
		.btl_version = {
			MCA_BTL_DEFAULT_VERSION("ri2n"),
			.mca_open_component = rbtl_component_open,
			.mca_close_component = rbtl_component_close,
			.mca_register_component_params = rbtl_component_register,
		},
		.btl_data = {
			.param_field = MCA_BASE_METADATA_PARAM_NONE,
		},
		.btl_init = rbtl_component_init,
		.btl_progress = rbtl_component_progress,
	},
};

static int rbtl_component_register(void)
{
	return rbtl_params_register(&mca_btl_ri2n_component, &mca_btl_ri2n_module);
}

static int rbtl_component_open(void)
{
	rbtl_frag_lists_construct(&mca_btl_ri2n_component);
	return OPAL_SUCCESS;
}

static int rbtl_component_close(void)
{
	rbtl_frag_lists_destruct(&mca_btl_ri2n_component);
	return OPAL_SUCCESS;
}

/* ---- the keeper (rn_hkeep.h) ---- */

static int keeper_trylock(void *arg) { return rbtl_trylock(arg); }

static void keeper_unlock(void *arg) { rbtl_unlock(arg); }

/* A pass that never calls the PML; none while progress runs or before the module is up. */
static int keeper_pass(void *arg, uint64_t now)
{
	mca_btl_ri2n_module_t *m = arg;

	if (!m->in_progress && m->ready) {
		m->in_progress = 1;
		rbtl_stream_pass(m, now, 0);
		m->in_progress = 0;
	}
	return 1; /* the BTL's keeper keeps its pace */
}

static void keeper_start(mca_btl_ri2n_module_t *m)
{
	int ms = mca_btl_ri2n_component.p.keeper_ms;
	uint64_t period = ms > 0 ? (uint64_t)ms * 1000000 : 0; /* 0: no keeper */

	if (m->keep.on)
		return;
	/* MPI has not polled for two periods: the keeper steps in */
	m->keep = (rn_hkeep){ .period_ns = period, .quiet_ns = 2 * period, .idle_x = 1,
			      .clock = rbtl_now_ns, .last = &m->last_progress_ns,
			      .trylock = keeper_trylock, .unlock = keeper_unlock,
			      .pass = keeper_pass, .arg = m };
	rn_hkeep_start(&m->keep);
}

void rbtl_keeper_stop(mca_btl_ri2n_module_t *m)
{
	rn_hkeep_stop(&m->keep);
}

/* ---- init and progress ---- */

static mca_btl_base_module_t **rbtl_component_init(int *num_btls, bool progress_threads,
						   bool mpi_threads)
{
	mca_btl_ri2n_module_t *m = &mca_btl_ri2n_module;
	mca_btl_base_module_t **btls;

	(void)progress_threads;
	(void)mpi_threads;
	*num_btls = 0;
	if (rbtl_module_init(m) != OPAL_SUCCESS)
		return NULL;
	btls = malloc(sizeof(*btls));
	if (!btls)
		return NULL;
	btls[0] = &m->super;
	*num_btls = 1;
	keeper_start(m);
	return btls;
}

static int rbtl_component_progress(void)
{
	mca_btl_ri2n_module_t *m = &mca_btl_ri2n_module;
	uint64_t now;
	int n;

	if (!m->ready || rbtl_trylock(m) != 0)
		return 0;
	/* a PML callback that polls again: the outer pass is still running */
	if (m->in_progress) {
		rbtl_unlock(m);
		return 0;
	}
	m->in_progress = 1;
	now = rbtl_now_ns();
	__atomic_store_n(&m->last_progress_ns, now, __ATOMIC_RELAXED);
	n = rbtl_stream_pass(m, now, 1);
	m->in_progress = 0;
	rbtl_unlock(m);
	return n;
}
