/*
 * ri2n-knobs-doc - prints the tables of docs/CONFIG.md that list every knob,
 * from the tables the code uses: `knobs`, those of a connection
 * (RN_KNOB_LIST, src/core/rn_knob_list.h); `process-knobs`, those of a
 * process (RN_PROC_LIST, src/host/rn_knobs.h); `ofi-knobs`, the
 * libfabric provider's (RFI_KNOB_LIST, src/host/rfi_knob_list.h, for
 * docs/OFI.md); `options`, the name of
 * every RI2N_SOL socket option in them; `conf`, etc/ri2n.conf, a system
 * configuration file with every knob commented out at its default.  The config_doc test compares the
 * tables with docs/CONFIG.md and the options with include/ri2n.h's enum;
 * `tests/config_doc.sh ROOT THIS --update` writes the tables there.  Never
 * installed.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "rfi_knob_list.h"
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

static void print_conn(void)
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
}

static void print_proc(void)
{
	printf("| variable | also a `RI2N_SOL` option | default | range | what |\n");
	printf("|---|---|---|---|---|\n");
	for (size_t i = 0; i < RN_PROC__COUNT; i++) {
		const rn_proc_knob *k = &rn_proc_knobs[i];

		/* never a value of the environment here: a SECRET row's is a key */
		printf("| `%s` | %s | %s | ", k->env, k->opt ? "yes" : "-", k->shown);
		if (k->type == RN_PROC_T_INT)
			printf("%lld..%lld", (long long)k->lo, (long long)k->hi);
		else
			printf("text");
		printf(" | %s |\n", k->doc);
	}
}

#define OFI_IS_INT 1 /* the type of a row of RFI_KNOB_LIST */
#define OFI_IS_TEXT 0

/* The libfabric provider's parameters, FI_RI2N_<NAME> in the environment. */
static void print_ofi_row(const char *name, int is_int, const char *shown, int hi, const char *doc)
{
	printf("| `FI_RI2N_");
	for (const char *c = name; *c; c++)
		putchar(toupper((unsigned char)*c));
	printf("` | %s | ", shown);
	if (is_int)
		printf("0..%d", hi);
	else
		printf("text");
	printf(" | %s |\n", doc);
}

static void print_ofi(void)
{
	printf("| variable | default | range | what |\n");
	printf("|---|---|---|---|\n");
#define OFI_ROW(name, field, type, def, hi, scale, shown, doc) \
	print_ofi_row(#name, OFI_IS_##type, shown, hi, doc);
	RFI_KNOB_LIST(OFI_ROW)
#undef OFI_ROW
}

/* Text as "# " comment lines of at most 76 columns, less Markdown's backquotes. */
static void print_comment(const char *text)
{
	const char *p = text;

	while (*p) {
		const char *brk = NULL, *c;
		int col = 2;

		for (c = p; *c && (col < 76 || !brk); c++) {
			if (*c == ' ')
				brk = c;
			if (*c != '`')
				col++;
		}
		if (!*c)
			brk = c;
		printf("# ");
		for (c = p; c < brk; c++)
			if (*c != '`')
				putchar(*c);
		printf("\n");
		p = *brk ? brk + 1 : brk;
	}
}

/* One FI_RI2N_<NAME> parameter in the configuration file, commented out. */
static void print_conf_ofi(const char *name, int is_int, int def, const char *shown,
			   const char *doc)
{
	char line[512];

	snprintf(line, sizeof(line), "%s (default: %s)", doc, shown);
	printf("\n");
	print_comment(line);
	printf("#FI_RI2N_");
	for (const char *c = name; *c; c++)
		putchar(toupper((unsigned char)*c));
	if (is_int)
		printf(" = %d\n", def);
	else
		printf(" =\n");
}

/* A configuration file (rn_conf.c reads it) listing every knob, each commented out. */
static void print_conf(void)
{
	rn_config cfg;
	char line[512];

	rn_config_default(&cfg);
	print_comment("/etc/ri2n/ri2n.conf - ri2n's system configuration file (docs/CONFIG.md, "
		      "ri2n-info(1)). One NAME = value a line; the environment wins over this file, "
		      "a socket option or MCA parameter over both; ri2n-info shows what holds and "
		      "why. Every knob is here, commented out at its default. This file must be "
		      "owned by root and writable by nobody else. Written from the code's tables "
		      "by tools/ri2n-knobs-doc conf.");
	for (size_t i = 0; i < RN_KNOB__COUNT; i++) {
		const rn_knob *k = &rn_knobs[i];
		int64_t v = 0;

		rn_knob_get(&cfg, k->opt, &v);
		snprintf(line, sizeof(line), "%s (%lld..%lld%s%s)", k->doc, (long long)k->lo,
			 (long long)k->hi, *rn_knob_unit(k) ? " " : "", rn_knob_unit(k));
		printf("\n");
		print_comment(line);
		printf("#%s = %lld\n", k->env, (long long)v);
	}
	for (size_t i = 0; i < RN_PROC__COUNT; i++) {
		const rn_proc_knob *k = &rn_proc_knobs[i];

		printf("\n");
		if (k->type == RN_PROC_T_SECRET) { /* refused here: rn_conf.c */
			print_comment("RI2N_KEY is never set here: name the key's own file with "
				      "RI2N_KEY_FILE (mode 600).");
			continue;
		}
		snprintf(line, sizeof(line), "%s (default: %s)", k->doc, k->shown);
		print_comment(line);
		if (k->type == RN_PROC_T_INT)
			printf("#%s = %lld\n", k->env, (long long)k->def);
		else
			printf("#%s =\n", k->env);
	}
	printf("\n");
	print_comment("The libfabric provider's parameters (docs/OFI.md): libfabric's "
		      "environment wins over these lines.");
#define OFI_CONF(name, field, type, def, hi, scale, shown, doc) \
	print_conf_ofi(#name, OFI_IS_##type, def, shown, doc);
	RFI_KNOB_LIST(OFI_CONF)
#undef OFI_CONF
}

/* Every option at level RI2N_SOL the tables know, one name a line. */
static void print_options(void)
{
	for (size_t i = 0; i < RN_KNOB__COUNT; i++)
		printf("%s\n", rn_knobs[i].env);
	for (size_t i = 0; i < RN_PROC__COUNT; i++)
		if (rn_proc_knobs[i].opt)
			printf("%s\n", rn_proc_knobs[i].env);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "knobs") == 0) {
		print_conn();
	} else if (argc == 2 && strcmp(argv[1], "process-knobs") == 0) {
		print_proc();
	} else if (argc == 2 && strcmp(argv[1], "ofi-knobs") == 0) {
		print_ofi();
	} else if (argc == 2 && strcmp(argv[1], "options") == 0) {
		print_options();
	} else if (argc == 2 && strcmp(argv[1], "conf") == 0) {
		print_conf();
	} else {
		fprintf(stderr, "usage: ri2n-knobs-doc knobs|process-knobs|ofi-knobs|options|conf\n");
		return 2;
	}
	return 0;
}
