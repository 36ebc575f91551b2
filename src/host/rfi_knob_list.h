/*
 * rfi_knob_list.h - the libfabric provider's own knobs, once.  Each is a
 * libfabric parameter of provider ri2n (`fi_info -e` lists it; the
 * environment sets it as FI_RI2N_<NAME>).  rfi_prov.c defines and reads
 * them and rfi.h's struct rfi_knobs holds them; docs/OFI.md's table is
 * printed from this list (tools/ri2n-knobs-doc ofi-knobs; the config_doc
 * test compares).  It sits in the host kit, not in ofi/, because the
 * configuration file (rn_conf.c) names these parameters too and the kit
 * includes nothing of a driver.  No includes: the doc tool takes it
 * without libfabric.
 *
 * RFI_KNOB_LIST(X), one row each:
 *
 *   X(name, field, type, def, hi, scale, shown, doc)
 *
 *   name   the parameter's name (FI_RI2N_<NAME> in the environment)
 *   field  its member of struct rfi_knobs
 *   type   INT: a whole number (negative: def; above hi: hi), stored times
 *          scale (uint64_t); TEXT: a string (char *; def, hi, scale unused)
 *   shown  the default as fi_info -e and docs/OFI.md state it
 *   doc    one line for fi_info -e and docs/OFI.md
 */
#ifndef RFI_KNOB_LIST_H
#define RFI_KNOB_LIST_H

#define RFI_KNOB_LIST(X)                                                                    \
	X(rails, rails, TEXT, 0, 0, 0, "RI2N_RAILS, else every up IPv4 interface, one per subnet", \
	  "rails: interface names, IPv4 or IPv6 addresses, comma separated; `name:backup` for a " \
	  "backup rail")                                                                    \
	X(inject_size, inject_size, INT, 4096, 65536, 1, "4096",                            \
	  "largest fi_inject / fi_tinject message, bytes")                                  \
	X(unexpected_mb, unexp_max, INT, 256, 2147483647, 1048576, "256",                   \
	  "messages received before their receive was posted are buffered up to this many " \
	  "MiB per endpoint; past it senders wait (ri2n's flow control)")                   \
	X(unexpected_link_mb, unexp_link_max, INT, 128, 2147483647, 1048576, "128",         \
	  "...and up to this many MiB from one connection; a larger message waits for its " \
	  "receive")                                                                        \
	X(unexpected_stall_ms, unexp_stall_ns, INT, 30000, 2147483647, 1000000, "30000",    \
	  "an unexpected message whose bytes stop coming for this long is dropped and its " \
	  "connection reset, ms")                                                           \
	X(attempt_ms, attempt_ns, INT, 1000, 2147483647, 1000000, "1000",                   \
	  "one connect attempt on one of the peer's rails before the next rail is tried, ms") \
	X(linger_ms, linger_ns, INT, 2000, 2147483647, 1000000, "2000",                     \
	  "fi_close of an endpoint waits this long for its sent data to be acknowledged, ms") \
	X(keeper_ms, keeper_ns, INT, 1, 2147483647, 1000000, "1",                           \
	  "when the application has not called into an endpoint for this long and data is " \
	  "owed, a thread of the provider runs its progress, ms (0: never; idle: 50x this)")

#endif
