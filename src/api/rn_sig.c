/*
 * rn_sig.c - the per-thread signal state of rn_sig.h.  In the engine's
 * library: the fast path reads it, the trampoline (rn_sigcalls.c) writes it.
 */
#include "rn_sig.h"

RN_TLS int rn_sig_t_handler;
RN_TLS int rn_sig_t_calls;
RN_TLS unsigned rn_sig_t_restart;
RN_TLS unsigned rn_sig_t_norestart;
