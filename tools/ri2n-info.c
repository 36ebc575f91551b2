/*
 * ri2n-info - every knob of ri2n with the value a process started here and
 * now would use, and where that value comes from: the default, the system
 * configuration file (file:line) or the environment.  In the spirit of
 * ompi_info, fi_info and ucx_info.  It reads the knobs through the library's
 * own code (rn_knobs.c, rn_conf.c), so what it prints is what ri2n does; a
 * socket option or an MCA parameter, set inside a program, is not seen here.
 *
 *   ri2n-info [--knob NAME] [--version] [--help]
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rfi_knob_list.h"
#include "rn_conf.h"
#include "rn_knobs.h"

#ifndef RI2N_VERSION
#define RI2N_VERSION "?"
#endif

static void print_row(const char *env, const char *value, int from, int line)
{
	char where[300];

	if (from == RN_FROM_ENV)
		snprintf(where, sizeof(where), "environment");
	else if (from == RN_FROM_FILE)
		snprintf(where, sizeof(where), "%s:%d", rn_conf_path(), line);
	else
		snprintf(where, sizeof(where), "default");
	printf("%-27s %-24s %s\n", env, value, where);
}

/* Connection knob i: the value rn_knobs_apply leaves, as the user writes it. */
static void print_conn(size_t i, const rn_config *cfg, const rn_knob_from *from)
{
	char v[32];
	int64_t n = 0;

	rn_knob_get(cfg, rn_knobs[i].opt, &n);
	snprintf(v, sizeof(v), "%lld", (long long)n);
	print_row(rn_knobs[i].env, v, from[i].from, from[i].line);
}

static void print_proc(size_t i)
{
	const rn_proc_knob *k = &rn_proc_knobs[i];
	const char *s = rn_proc_text((int)i);
	char v[32];
	int line = 0, from = rn_knob_origin(k->env, &line);
	int64_t n;

	switch (k->type) {
	case RN_PROC_T_SECRET: /* never the key: only whether one is set */
		print_row(k->env, s ? "(set, not shown)" : "none", s ? from : RN_FROM_DEFAULT, line);
		return;
	case RN_PROC_T_INT:
		if (i == RN_PROC_BUSY_POLL_US && s && strcmp(s, "auto") == 0) {
			print_row(k->env, "auto", from, line);
			return;
		}
		if (rn_proc_int((int)i, &n) < 0) /* reported; the default stands */
			from = RN_FROM_DEFAULT;
		snprintf(v, sizeof(v), "%lld", (long long)n);
		print_row(k->env, v, from, line);
		return;
	case RN_PROC_T_TEXT:
		if (s) {
			print_row(k->env, s, from, line);
			return;
		}
		printf("%-27s %-24s default (", k->env, "-");
		for (const char *c = k->shown; *c; c++) /* docs/CONFIG.md's Markdown, less its quotes */
			if (*c != '`')
				putchar(*c);
		printf(")\n");
		return;
	}
}

/*
 * The libfabric provider's parameter FI_RI2N_<name>: libfabric reads the
 * environment, the provider the file when libfabric has nothing
 * (ofi/rfi_prov.c); TEXT rows have no default but `shown`.
 */
static void print_ofi(const char *name, int is_int, const char *shown, char *env, size_t n)
{
	const char *s;
	int line = 0, from;

	snprintf(env, n, "FI_RI2N_");
	for (size_t i = strlen(env); *name && i + 1 < n; name++, i++) {
		env[i] = (char)toupper((unsigned char)*name);
		env[i + 1] = '\0';
	}
	from = rn_knob_origin(env, &line);
	s = from == RN_FROM_ENV ? getenv(env) : rn_conf_get(env, NULL);
	if (s)
		print_row(env, s, from, line);
	else if (is_int) /* the shown default of a number is the number */
		print_row(env, shown, RN_FROM_DEFAULT, 0);
	else
		printf("%-27s %-24s default (%s)\n", env, "-", shown);
}

/* Every FI_RI2N_* row, or only `one`'s (1 when it is not one of them). */
static int print_ofi_rows(const char *one)
{
	char env[64];
	int found = 0;

#define OFI_PRINT(name, field, type, def, hi, scale, shown, doc)                  \
	if (!one || strcasecmp(one, "FI_RI2N_" #name) == 0) {                     \
		print_ofi(#name, OFI_IS_##type, shown, env, sizeof(env));         \
		found = 1;                                                        \
	}
#define OFI_IS_INT 1
#define OFI_IS_TEXT 0
	RFI_KNOB_LIST(OFI_PRINT)
#undef OFI_PRINT
	return !found;
}

/* The row named `name` (RI2N_MTU or MTU, any case; FI_RI2N_*); 1 if there is none. */
static int print_one(const char *name, const rn_config *cfg, const rn_knob_from *from)
{
	char env[64];
	size_t n = 0;

	if (strncasecmp(name, "FI_RI2N_", 8) == 0 && print_ofi_rows(name) == 0)
		return 0;
	if (strncasecmp(name, "RI2N_", 5) == 0)
		name += 5;
	n = (size_t)snprintf(env, sizeof(env), "RI2N_");
	for (; *name && n + 1 < sizeof(env); name++)
		env[n++] = (char)(*name >= 'a' && *name <= 'z' ? *name - 32 : *name);
	env[n] = '\0';
	for (size_t i = 0; i < RN_KNOB__COUNT; i++)
		if (strcmp(rn_knobs[i].env, env) == 0) {
			print_conn(i, cfg, from);
			return 0;
		}
	for (size_t i = 0; i < RN_PROC__COUNT; i++)
		if (strcmp(rn_proc_knobs[i].env, env) == 0) {
			print_proc(i);
			return 0;
		}
	fprintf(stderr, "ri2n-info: no knob %s (ri2n-info lists them all)\n", env);
	return 1;
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: ri2n-info [--knob NAME] | --help | --version\n"
		   "  every ri2n knob: its effective value and where it comes from (default,\n"
		   "  the configuration file's file:line, or the environment)\n"
		   "  --knob NAME   only that knob (RI2N_MTU, or MTU; FI_RI2N_INJECT_SIZE)\n"
		   "  --help        this text\n"
		   "  --version     the version\n"
		   "configuration file: $RI2N_CONF, else " RN_CONF_PATH "\n");
	return rc;
}

int main(int argc, char **argv)
{
	rn_config cfg;
	rn_knob_from from[RN_KNOB__COUNT];
	const char *one = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--knob") == 0 && i + 1 < argc)
			one = argv[++i];
		else if (strncmp(argv[i], "--knob=", 7) == 0)
			one = argv[i] + 7;
		else if (strcmp(argv[i], "--version") == 0)
			return printf("ri2n-info %s\n", RI2N_VERSION) < 0;
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return usage(stdout, 0);
		else
			return usage(stderr, 2);
	}
	rn_config_default(&cfg);
	rn_knobs_apply(&cfg, from); /* reads the file first: its reports go to stderr */
	if (one)
		return print_one(one, &cfg, from);
	printf("configuration file: %s (%s)\n", *rn_conf_path() ? rn_conf_path() : "none",
	       rn_conf_state());
	printf("%-27s %-24s %s\n", "knob", "value", "from");
	for (size_t i = 0; i < RN_KNOB__COUNT; i++)
		print_conn(i, &cfg, from);
	for (size_t i = 0; i < RN_PROC__COUNT; i++)
		print_proc(i);
	print_ofi_rows(NULL);
	return 0;
}
