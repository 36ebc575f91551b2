/*
 * ri2n-knobs-doc - prints the table of docs/CONFIG.md that lists every knob
 * of a connection, from the table the code uses (src/core/rn_knob_list.h).
 * The config_doc test compares it with docs/CONFIG.md; `tests/config_doc.sh
 * --update` writes it there.  Built with the tests, never installed.
 */
#include <stdio.h>

#include "ri2n.h"
#include "rn_knobs.h"

/* The default as a person reads it: the library's, in the knob's unit. */
static void print_default(const rn_knob *k, const rn_config *cfg)
{
	int64_t v = 0;

	rn_knob_get(cfg, k->opt, &v);
	switch (k->kind) {
	case RN_KNOB_K_MTU:
		printf("smallest rail MTU (%lld)", (long long)v);
		break;
	case RN_KNOB_K_BYTES:
		printf("%lld (%u packets)", (long long)v,
		       *(const uint32_t *)(const void *)((const char *)cfg + k->off));
		break;
	default:
		printf("%lld", (long long)v);
	}
}

int main(void)
{
	rn_config cfg;

	rn_config_default(&cfg);
	printf("| variable and `RI2N_SOL` option | MCA parameter | default | range | unit | what |\n");
	printf("|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
		const rn_knob *k = &rn_knobs[i];

		printf("| `%s` | `btl_ri2n_%s` | ", k->env, k->mca);
		print_default(k, &cfg);
		printf(" | %lld..%lld | %s | %s |\n", (long long)k->lo, (long long)k->hi,
		       *rn_knob_unit(k) ? rn_knob_unit(k) : "-", k->doc);
	}
	return 0;
}
