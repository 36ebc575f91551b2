/*
 * btl_ri2n_frag.h - send descriptors.
 *
 * A fragment is what the PML fills and hands to btl_send: segment 0 holds
 * the PML's header (and, for packed data, the data), segment 1 may point
 * straight at the user's buffer (contiguous data is never copied before it
 * goes into the ri2n send ring).  Three free lists: eager-sized, max-sized
 * and "user" fragments with no buffer of their own.
 */
#ifndef BTL_RI2N_FRAG_H
#define BTL_RI2N_FRAG_H

#include "btl_ri2n.h"

struct mca_btl_ri2n_frag_t {
	mca_btl_base_descriptor_t base;
	mca_btl_base_segment_t segments[2];
	struct mca_btl_base_endpoint_t *endpoint;
	opal_free_list_t *list;     /* the list it returns to */
	size_t size;                /* bytes of buffer after the struct */
	size_t done;                /* bytes of header + segments already in the stream */
	uint8_t hdr[RI2N_HDR_LEN];  /* the stream frame header */
	uint8_t tag;
};

OBJ_CLASS_DECLARATION(mca_btl_ri2n_frag_t);

/* The buffer that follows a fragment from the eager or max list. */
static inline void *rbtl_frag_data(mca_btl_ri2n_frag_t *f)
{
	return (void *)(f + 1);
}

/* A fragment with room for `size` bytes (NULL if more than the max send size). */
mca_btl_ri2n_frag_t *rbtl_frag_alloc(size_t size);
/* A fragment without a buffer. */
mca_btl_ri2n_frag_t *rbtl_frag_alloc_user(void);
void rbtl_frag_return(mca_btl_ri2n_frag_t *f);
/* Sets up the three free lists; OPAL_SUCCESS or an error. */
int rbtl_frag_lists_init(mca_btl_ri2n_component_t *c, size_t eager, size_t max);
void rbtl_frag_lists_construct(mca_btl_ri2n_component_t *c);
void rbtl_frag_lists_destruct(mca_btl_ri2n_component_t *c);
/* Fills the frame header from the segments and the tag. */
void rbtl_frag_set_hdr(mca_btl_ri2n_frag_t *f, uint8_t tag);
/* Bytes of header + payload the fragment puts on the stream. */
size_t rbtl_frag_wire_len(const mca_btl_ri2n_frag_t *f);

#endif
