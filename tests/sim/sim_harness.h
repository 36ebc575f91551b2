/*
 * sim_harness.h - two ri2n endpoints over a simulated network, with an
 * application on each end that streams a seeded pattern and checks every
 * byte it receives.
 */
#ifndef SIM_HARNESS_H
#define SIM_HARNESS_H

#include "rn_core.h"
#include "sim_net.h"

#define SIM_MAX_EVENTS 4096

typedef struct sim_event {
	rn_event ev;
	uint64_t rx_packets; /* datagrams this host had received when it happened */
} sim_event;

typedef struct sim_host {
	int id; /* 0: client, 1: server */
	rn_rail_addr rails[SIM_MAX_RAILS];
	int nrails;
	rn_conn *conn;
	rn_listener lis;
	int listening;
	uint64_t rng;
	uint32_t forced[8]; /* values the rng returns first; 0: draw one */
	int nforced, iforced;

	/* the application */
	uint64_t to_send, sent, to_recv, recvd;
	uint64_t send_seed, recv_seed;
	int shut, eof, err;
	uint64_t mismatches;
	uint64_t t_eof_ns, t_err_ns;

	/*
	 * Request/response when msg > 0: the client writes msg bytes at a
	 * time and waits for msg bytes back before the next; the server
	 * answers with as many bytes as it got.  lat_ns[i]: the client's
	 * round trip of message i (the write to the answer's last byte).
	 */
	uint32_t msg;
	uint64_t t_msg_ns;
	uint64_t *lat_ns;
	uint64_t nlat;

	/* what happened */
	sim_event events[SIM_MAX_EVENTS];
	int nevents;
	uint8_t tx_up; /* send view from the latest event */
	uint64_t data_tx[SIM_MAX_RAILS];        /* DATA datagrams sent per rail */
	uint64_t data_tx_bytes[SIM_MAX_RAILS];  /* ...and their bytes */
	uint64_t data_tx_while_down[SIM_MAX_RAILS];
	uint64_t rx_packets;                    /* datagrams delivered to this host */
	uint64_t send_errors;
	uint64_t extra_accepts;                 /* handshakes completed after the first */
} sim_host;

typedef struct sim {
	sim_net net;
	sim_host host[2];
	rn_config cfg[2];
	uint64_t now_ns;
	uint64_t limit_ns;       /* simulated time limit: a hang fails the run */
	uint64_t vanish_ns;      /* server disappears silently at this time (0: never) */
	uint64_t t_start_ns;
	uint64_t seed;
	int hung;                /* 1: time limit reached, 2: a timer kept firing */
	int stuck;
	/* optional hook run at each step, for scenario probes */
	void (*probe)(struct sim *s, void *arg);
	void *probe_arg;
} sim;

/* Sets up a network of nrails default rails and both hosts (server listening). */
void sim_init(sim *s, int nrails, uint64_t seed);
void sim_free(sim *s);
/* Starts the client's connect and the transfers: up = client->server bytes, down = back. */
int sim_start(sim *s, uint64_t up, uint64_t down);
/*
 * The same as request/response: the client writes n messages of msg bytes,
 * one at a time, the server answers each (sim_host.msg, lat_ns).
 */
int sim_start_rr(sim *s, uint64_t n, uint32_t msg);
/* Runs until both ends are closed or failed, or until limit_ns. */
void sim_run(sim *s);

/* The first event of a type on a rail at or after t (any rail if rail < 0), or NULL. */
const rn_event *sim_find_event(const sim_host *h, rn_event_type type, int rail, uint64_t t);
/* The same, with the host's receive count at the time. */
const sim_event *sim_find_sim_event(const sim_host *h, rn_event_type type, int rail, uint64_t t);

#endif
