/*
 * btl_ri2n_compat.h - what differs for this BTL between Open MPI 4.1 and 5.0.
 *
 * Every file of the BTL is written once, against the names below; this is the
 * only place that knows the two series apart (OPAL_MAJOR_VERSION, from
 * opal_config.h).  What moved from 4.1 (BTL interface 3.1) to 5.0 (3.3):
 *   - the receive callback takes one receive descriptor (endpoint, segments,
 *     tag and the registration's cbdata) instead of a tag, a send descriptor
 *     and the cbdata;
 *   - the modex keys and types are PMIx's own names (PMIX_GLOBAL, ...), no
 *     longer opal's copies (OPAL_PMIX_GLOBAL, ...);
 *   - btl_ft_event is gone from the module (this BTL never set it);
 *   - OPAL_MODULE_DECLSPEC is gone: the component symbol is exported with
 *     OPAL_DECLSPEC;
 *   - opal_proc_t no longer carries the host name (it would take a PMIx
 *     lookup, which the BTL's own threads should not make: 5.0 names peers
 *     by rank alone).
 * The function table, free lists, convertor and the component are the same.
 */
#ifndef BTL_RI2N_COMPAT_H
#define BTL_RI2N_COMPAT_H

#include "opal_config.h"

#include <string.h>

#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"

#if OPAL_MAJOR_VERSION >= 5
#include "opal/mca/pmix/pmix-internal.h" /* the modex macros (4.1: pmix.h) */
#define RI2N_OMPI_SERIES 5
/* scope, job-size key and value type of the modex calls */
#define RI2N_MODEX_GLOBAL PMIX_GLOBAL
#define RI2N_MODEX_JOB_SIZE PMIX_JOB_SIZE
#define RI2N_MODEX_UINT32 PMIX_UINT32
/* what exports the component symbol Open MPI looks up in mca_btl_ri2n.so */
#define RI2N_COMPONENT_DECLSPEC OPAL_DECLSPEC
/* the host name of an opal_proc_t PROC, or NULL when not known */
#define RI2N_PROC_HOSTNAME(proc) ((void)(proc), (const char *)NULL)
#else
#include "opal/mca/pmix/pmix.h"
#define RI2N_OMPI_SERIES 4
#define RI2N_MODEX_GLOBAL OPAL_PMIX_GLOBAL
#define RI2N_MODEX_JOB_SIZE OPAL_PMIX_JOB_SIZE
#define RI2N_MODEX_UINT32 OPAL_UINT32
#define RI2N_COMPONENT_DECLSPEC OPAL_MODULE_DECLSPEC
#define RI2N_PROC_HOSTNAME(proc) ((const char *)(proc)->proc_hostname)
#endif

/*
 * Hands COUNT received segments with TAG, from EP, to whoever registered TAG
 * (the PML) and returns 1; returns 0 when nobody did.  The segments need only
 * live until the call returns (the receiver copies what it keeps).
 */
static inline int rbtl_compat_deliver(struct mca_btl_base_module_t *btl,
				      struct mca_btl_base_endpoint_t *ep, mca_btl_base_tag_t tag,
				      mca_btl_base_segment_t *segs, size_t count)
{
	const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;

	if (!reg->cbfunc)
		return 0;
#if RI2N_OMPI_SERIES >= 5
	const mca_btl_base_receive_descriptor_t d = {
		.endpoint = ep,
		.des_segments = segs,
		.des_segment_count = count,
		.tag = tag,
		.cbdata = reg->cbdata,
	};
	reg->cbfunc(btl, &d);
#else
	mca_btl_base_descriptor_t d;

	(void)ep;
	memset(&d, 0, sizeof(d));
	d.des_segments = segs;
	d.des_segment_count = count;
	reg->cbfunc(btl, tag, &d, reg->cbdata);
#endif
	return 1;
}

#endif
