/*
 * btl_ri2n_params.c - the btl_ri2n_* MCA variables.
 *
 * Every knob of the library (RN_KNOB_LIST, src/core/rn_knob_list.h: name,
 * help, bounds) is also an MCA variable, so `ompi_info --param
 * btl ri2n --level 9` lists them and `--mca btl_ri2n_dead_peer_ms 3000` (or
 * OMPI_MCA_btl_ri2n_dead_peer_ms) sets them.  Their defaults are the
 * library's, after any RI2N_* environment variable: the MCA value, when
 * given, wins.
 */
#include "opal_config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btl_ri2n.h"
#include "ri2n.h"
#include "rn_knobs.h"

#define LVL_USER OPAL_INFO_LVL_1   /* what a user chooses: rails */
#define LVL_TUNE OPAL_INFO_LVL_4   /* protocol tuning */
#define LVL_DEV OPAL_INFO_LVL_9    /* internals */

static void reg_int(mca_btl_ri2n_component_t *c, const char *name, const char *help, int level,
		    int *var)
{
	(void)mca_base_component_var_register(&c->super.btl_version, name, help,
					      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level,
					      MCA_BASE_VAR_SCOPE_READONLY, var);
}

static void reg_string(mca_btl_ri2n_component_t *c, const char *name, const char *help,
		       int level, char **var)
{
	(void)mca_base_component_var_register(&c->super.btl_version, name, help,
					      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, level,
					      MCA_BASE_VAR_SCOPE_READONLY, var);
}

/* Library defaults after RI2N_* variables, as the MCA variables' defaults. */
static void knob_defaults(rbtl_params *p)
{
	rn_config cfg;
	int64_t v;

	rn_config_default(&cfg);
	/*
	 * 4096 packets (~6 MB) rather than the library's 2048: MPI posts many large
	 * messages at once, and once the ring is full the PML feeds it fragments of
	 * every outstanding message in turn, so all of them finish late and together
	 * (100 ms stalls between bursts, 3% less bandwidth on 2 x 1 Gbit/s).
	 */
	cfg.snd_slots = RI2N_BTL_SND_SLOTS;
	rn_knobs_from_env(&cfg);
	for (size_t i = 0; i < RN_KNOB__COUNT; i++)
		p->knob[i] = rn_knob_get(&cfg, rn_knobs[i].opt, &v) == 0 ? (int)v : 0;
	/* the MTU follows the rails unless RI2N_MTU says otherwise */
	if (!rn_knob_env(RI2N_MTU))
		p->knob[RN_KNOB_MTU] = 0;
}

static void register_btl_defaults(mca_btl_ri2n_component_t *c, mca_btl_ri2n_module_t *m)
{
	mca_btl_base_module_t *b = &m->super;

	/* above btl/tcp (LOW + 100) so a job given both uses ri2n; below shared memory */
	b->btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW + 200;
	/* 64 KiB eager: a message up to it is one frame and needs no rendezvous; the
	 * send ring (3 MB by default) absorbs it at once */
	b->btl_eager_limit = 64 * 1024;
	b->btl_rndv_eager_limit = 64 * 1024;
	/* 256 KiB frames: the per-fragment cost (PML header, a completion, a frame
	 * reassembled at the receiver) is paid four times less often than with
	 * btl/tcp's 128 KiB, and a frame is still a small part of the ring */
	b->btl_max_send_size = 256 * 1024;
	b->btl_rdma_pipeline_send_length = 256 * 1024;
	b->btl_rdma_pipeline_frag_size = 256 * 1024;
	b->btl_min_rdma_pipeline_size = 0;
	/* send/receive only: ri2n is a byte stream, not remote memory access; in-place:
	 * contiguous user data goes straight from the user's buffer into the ring */
	b->btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_SEND_INPLACE;
	b->btl_bandwidth = 0; /* 0: set at init from the number of rails */
	b->btl_latency = 100;
	mca_btl_base_param_register(&c->super.btl_version, b);
}

int rbtl_params_register(mca_btl_ri2n_component_t *c, mca_btl_ri2n_module_t *m)
{
	rbtl_params *p = &c->p;
	int64_t v;

	mca_base_var_group_component_register(&c->super.btl_version,
					      "BTL over ri2n: one reliable stream per peer striped "
					      "over several Ethernet rails, with failover");
	knob_defaults(p);
	p->if_include = NULL;
	reg_string(c, "if_include",
		   "Rails: comma-separated interface names or IPv4 or IPv6 addresses; "
		   "name:backup for a backup rail (data only while no other rail works) "
		   "(default: RI2N_RAILS, else every up non-loopback IPv4 interface)",
		   LVL_USER, &p->if_include);
	for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
		const rn_knob *k = &rn_knobs[i];
		char help[400]; /* Open MPI keeps a copy */

		snprintf(help, sizeof(help), "%s (%s%s%lld..%lld; the library's %s)",
			 k->doc, rn_knob_unit(k), *rn_knob_unit(k) ? ", " : "", (long long)k->lo,
			 (long long)k->hi, k->env);
		reg_int(c, k->mca, help, LVL_TUNE, &p->knob[i]);
	}
	p->attempt_ms = 1000;
	reg_int(c, "attempt_ms", "One connect attempt over one rail lasts this long (ms) before "
		"the next rail is tried", LVL_TUNE, &p->attempt_ms);
	p->keeper_ms = 10;
	reg_int(c, "keeper_ms", "While MPI does not poll (a long computation), a helper thread "
		"drives the protocol every this many ms, so peers do not take this process for "
		"dead; 0 disables it", LVL_TUNE, &p->keeper_ms);
	p->gso = rn_proc_get(RN_PROC_GSO) != 0;
	reg_int(c, "gso", "Send runs of datagrams with UDP GSO when the kernel has it (0/1)",
		LVL_DEV, &p->gso);
	p->gro = rn_proc_get(RN_PROC_GRO) != 0;
	reg_int(c, "gro", "Receive coalesced datagrams with UDP GRO (0/1)", LVL_DEV, &p->gro);
	p->rx_ts = 1;
	reg_int(c, "rx_timestamps", "Time each datagram by the kernel's arrival stamp, not by when "
		"this process read it: a rank that was descheduled does not make the network look "
		"queued or a rail look silent (0/1)", LVL_DEV, &p->rx_ts);
	p->key_file = NULL;
	reg_string(c, "key_file",
		   "File holding the cluster key (64 hex digits): every datagram is then encrypted "
		   "and authenticated (AES-256-GCM under per-connection keys) and ranks without the "
		   "same key cannot connect.  A file, so that the key never "
		   "shows in ompi_info or on command lines (default: RI2N_KEY_FILE or RI2N_KEY; "
		   "none: no authentication)", LVL_USER, &p->key_file);
	p->log = NULL;
	reg_string(c, "log", "ri2n log level on stderr: debug, info, warn, error, off "
		   "(default: RI2N_LOG, else warn: one line per rail going down or up)",
		   LVL_USER, &p->log);
	/* RI2N_RING_MEM_MB (the table's default is the BTL's); not a number: refused at init */
	p->ring_mem_mb = rn_proc_int(RN_PROC_RING_MEM_MB, &v) < 0 ? -1 : (int)v;
	reg_int(c, "ring_mem_mb", "Ceiling on the memory of this process's rings, all peers "
		"together (MiB; 0: none; default RI2N_RING_MEM_MB, else 256).  A peer's rings start "
		"at 16 KiB and grow with its traffic up to sndbuf / rcvbuf; growth that would pass "
		"the ceiling is refused (the ring stays as it is: slower, nothing lost) and a warning "
		"says so.  A connection's first rings are always granted", LVL_TUNE, &p->ring_mem_mb);
	p->ring_share = 1;
	reg_int(c, "ring_share", "Each peer's rings grow to at most an equal share of "
		"ring_mem_mb (when that is below sndbuf / rcvbuf), so all of them fit under it and "
		"the ceiling is never reached within the job (0: rings grow to sndbuf / rcvbuf until "
		"the ceiling refuses)", LVL_DEV, &p->ring_share);
	p->verbose = 0;
	reg_int(c, "verbose", "Print each process's per-peer, per-rail counters at finalize (0/1)",
		LVL_USER, &p->verbose);
	p->free_list_num = 8;
	reg_int(c, "free_list_num", "Initial number of fragments per list", LVL_DEV,
		&p->free_list_num);
	p->free_list_max = -1;
	reg_int(c, "free_list_max", "Maximum number of fragments per list (-1: unlimited)",
		LVL_DEV, &p->free_list_max);
	p->free_list_inc = 32;
	reg_int(c, "free_list_inc", "Fragments added when a list runs out", LVL_DEV,
		&p->free_list_inc);
	register_btl_defaults(c, m);
	return OPAL_SUCCESS;
}

/* Applies every knob; some only fit once others are set, so retry a few passes. */
int rbtl_params_config(const rbtl_params *p, int min_mtu, rn_config *cfg, char *err, size_t len)
{
	int bad = -1;

	rn_config_default(cfg);
	for (int pass = 0; pass < 3; pass++) {
		bad = -1;
		for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
			int v = p->knob[i];

			if (i == RN_KNOB_MTU && v == 0)
				v = min_mtu < 576 ? 576 : min_mtu;
			if (rn_knob_set(cfg, rn_knobs[i].opt, v) != 0 && bad < 0)
				bad = (int)i;
		}
		if (bad < 0)
			break;
	}
	if (bad >= 0) {
		snprintf(err, len, "btl_ri2n_%s = %d is out of range or does not fit the other "
			 "settings (see docs/CONFIG.md)", rn_knobs[bad].mca, p->knob[bad]);
		return -1;
	}
	if (p->key_file && *p->key_file ? rn_knobs_key_from_file(cfg, p->key_file)
					: rn_knobs_key_from_env(cfg)) {
		snprintf(err, len, "the cluster key (btl_ri2n_key_file, RI2N_KEY_FILE or RI2N_KEY) "
			 "is not usable; see the message above");
		return -1;
	}
	return 0;
}
