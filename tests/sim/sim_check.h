/*
 * sim_check.h - what the simulator's test programs (test_sim.c,
 * test_incast.c) share: time units and CHECK, which ends a scenario (it
 * returns 1) with the reason in g_why for the program to print.
 */
#ifndef SIM_CHECK_H
#define SIM_CHECK_H

#include <stdio.h>
#include <stdint.h>

#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)

/* Why the scenario running failed; the program clears it before each one. */
static char g_why[512];

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			snprintf(g_why, sizeof(g_why), __VA_ARGS__);       \
			return 1;                                          \
		}                                                          \
	} while (0)

#endif
