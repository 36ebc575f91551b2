/*
 * rn_place.c - where the engine thread runs.
 *
 * RI2N_CPU=N pins it to CPU N.  Otherwise, if hwloc can tell which CPUs are
 * close to the rails' NICs (PCI locality), it runs there; virtual
 * interfaces (veth, bridges) have no locality, and then the scheduler
 * decides.  The choice is logged at debug level.
 */
#define _GNU_SOURCE
#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

#include "rn_knobs.h"
#include "rn_engine.h"
#include "rn_log.h"

/* The CPUs near the NIC of interface `name`, or NULL (caller frees). */
static hwloc_bitmap_t nic_cpus(hwloc_topology_t topo, const char *name)
{
	hwloc_obj_t os = NULL;

	while ((os = hwloc_get_next_osdev(topo, os)) != NULL) {
		hwloc_obj_t anc;

		if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !os->name ||
		    strcmp(os->name, name) != 0)
			continue;
		anc = hwloc_get_non_io_ancestor_obj(topo, os);
		if (anc && anc->cpuset)
			return hwloc_bitmap_dup(anc->cpuset);
	}
	return NULL;
}

void rn_place_thread(const rn_rail_info *rails, int nrails)
{
	hwloc_topology_t topo;
	hwloc_bitmap_t set = NULL;
	const char *cpu = rn_proc_text(RN_PROC_CPU);
	char *desc = NULL;

	if (hwloc_topology_init(&topo) < 0)
		return;
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	/* only the PCI locality of NICs matters: the GL plugin would probe X
	 * displays (TCP connects to 127.0.0.1:6000+), OpenCL would load drivers */
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
	if (hwloc_topology_load(topo) < 0) {
		hwloc_topology_destroy(topo);
		return;
	}
	if (cpu && *cpu) {
		char *end;
		long n = strtol(cpu, &end, 10);

		if (*end || n < 0 || n >= hwloc_bitmap_weight(hwloc_topology_get_topology_cpuset(topo))) {
			rn_warn("RI2N_CPU=%s is not a CPU number of this machine; not pinning", cpu);
		} else {
			set = hwloc_bitmap_alloc();
			hwloc_bitmap_only(set, (unsigned)n);
		}
	} else {
		for (int i = 0; i < nrails; i++) {
			hwloc_bitmap_t near = nic_cpus(topo, rails[i].name);

			if (!near)
				continue;
			if (!set)
				set = near;
			else {
				hwloc_bitmap_and(set, set, near);
				hwloc_bitmap_free(near);
			}
		}
		if (set && hwloc_bitmap_iszero(set)) {
			hwloc_bitmap_free(set);
			set = NULL;
		}
	}
	if (set && hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0) {
		hwloc_bitmap_asprintf(&desc, set);
		rn_debug("engine thread placed on CPUs %s (%s)", desc,
			 cpu && *cpu ? "RI2N_CPU" : "near the rails' NICs");
		free(desc);
	} else {
		rn_debug("engine thread left to the scheduler (%s)",
			 set ? "binding failed" : "no NIC locality known");
	}
	if (set)
		hwloc_bitmap_free(set);
	hwloc_topology_destroy(topo);
}
