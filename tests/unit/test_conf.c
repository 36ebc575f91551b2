/*
 * test_conf.c - the system configuration file (src/host/rn_conf.c) as the
 * knobs read it (rn_knobs.c): its lines, its place under the environment,
 * its bad lines and files reported with file:line, RI2N_CONF, the key.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit_common.h"

#include "ri2n.h"
#include "rn_conf.h"
#include "rn_knobs.h"

static char g_path[64];
static char g_err[8192]; /* stderr of the last captured() */

/* Writes text to a fresh file of mode `mode` and makes it this process's configuration. */
static const char *conf_file(const char *text, mode_t mode)
{
	int fd;

	snprintf(g_path, sizeof(g_path), "/tmp/ri2n-test-conf.XXXXXX");
	fd = mkstemp(g_path);
	assert_true(fd >= 0);
	assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	setenv("RI2N_CONF", g_path, 1);
	rn_conf_reset();
	return g_path;
}

static int saved_fd = -1;
static FILE *err_file;

static void capture(void)
{
	fflush(stderr);
	saved_fd = dup(2);
	err_file = tmpfile();
	assert_non_null(err_file);
	dup2(fileno(err_file), 2);
}

/* Ends capture(): g_err holds what went to stderr. */
static void captured(void)
{
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	rewind(err_file);
	g_err[fread(g_err, 1, sizeof(g_err) - 1, err_file)] = 0;
	fclose(err_file);
}

/* How often needle occurs in g_err. */
static int count_err(const char *needle)
{
	int n = 0;

	for (const char *p = g_err; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* One line of a file: what it is, its name and value, a word of the reason. */
static void test_conf_lines(void **state)
{
	static const struct {
		const char *line;
		enum rn_conf_line want;
		const char *name, *value, *why;
	} rows[] = {
		{ "", RN_CONF_BLANK, NULL, NULL, NULL },
		{ "   \t", RN_CONF_BLANK, NULL, NULL, NULL },
		{ "# RI2N_MTU = 9000", RN_CONF_BLANK, NULL, NULL, NULL },
		{ "  # indented comment", RN_CONF_BLANK, NULL, NULL, NULL },
		{ "RI2N_MTU = 9000", RN_CONF_SET, "RI2N_MTU", "9000", NULL },
		{ "RI2N_MTU=9000", RN_CONF_SET, "RI2N_MTU", "9000", NULL },
		{ "\tRI2N_HEARTBEAT_MS =  250  # faster heal\r", RN_CONF_SET, "RI2N_HEARTBEAT_MS",
		  "250", NULL },
		{ "RI2N_RAILS = \"r1,r2\"", RN_CONF_SET, "RI2N_RAILS", "r1,r2", NULL },
		{ "RI2N_RAILS = 10.1.0.5,10.2.0.5", RN_CONF_SET, "RI2N_RAILS", "10.1.0.5,10.2.0.5",
		  NULL },
		{ "RI2N_LOG = info", RN_CONF_SET, "RI2N_LOG", "info", NULL },
		{ "RI2N_BUSY_POLL_US = auto", RN_CONF_SET, "RI2N_BUSY_POLL_US", "auto", NULL },
		{ "RI2N_BUSY_POLL_US = -1", RN_CONF_SET, "RI2N_BUSY_POLL_US", "-1", NULL },
		{ "RI2N_KEY_FILE = /etc/ri2n/key", RN_CONF_SET, "RI2N_KEY_FILE", "/etc/ri2n/key",
		  NULL },
		{ "RI2N_MTU 9000", RN_CONF_BAD, NULL, NULL, "not NAME = value" },
		{ "ri2n_mtu = 9000", RN_CONF_BAD, "ri2n_mtu", "9000", "not NAME = value" },
		{ " = 9000", RN_CONF_BAD, "", "9000", "not NAME = value" },
		{ "RI2N_NOPE = 1", RN_CONF_BAD, "RI2N_NOPE", "1", "unknown knob" },
		{ "RI2N_CONF = /etc/x", RN_CONF_BAD, "RI2N_CONF", "/etc/x", "unknown knob" },
		{ "RI2N_MTU =", RN_CONF_BAD, "RI2N_MTU", "", "no value" },
		{ "RI2N_MTU = 70000", RN_CONF_BAD, "RI2N_MTU", "70000", "from 576 to 65535" },
		{ "RI2N_MTU = 9000x", RN_CONF_BAD, "RI2N_MTU", "9000x", "not an integer" },
		{ "RI2N_STAT_MS = -5", RN_CONF_BAD, "RI2N_STAT_MS", "-5", "from 0 to 3600000" },
		{ "RI2N_LOG = loud", RN_CONF_BAD, "RI2N_LOG", "loud", "debug, info" },
		{ "RI2N_KEY = 0011", RN_CONF_BAD, "RI2N_KEY", "0011", "RI2N_KEY_FILE" },
		/* the libfabric provider's parameters (src/host/rfi_knob_list.h) */
		{ "FI_RI2N_INJECT_SIZE = 1024", RN_CONF_SET, "FI_RI2N_INJECT_SIZE", "1024", NULL },
		{ "FI_RI2N_RAILS = r1", RN_CONF_SET, "FI_RI2N_RAILS", "r1", NULL },
		{ "FI_RI2N_INJECT_SIZE = -1", RN_CONF_BAD, "FI_RI2N_INJECT_SIZE", "-1", "from 0 to" },
		{ "FI_RI2N_Inject_Size = 1", RN_CONF_BAD, NULL, NULL, "not NAME = value" },
		{ "FI_RI2N_NOPE = 1", RN_CONF_BAD, "FI_RI2N_NOPE", "1", "unknown knob" },
		{ "FI_PROVIDER = ri2n", RN_CONF_BAD, "FI_PROVIDER", "ri2n", "unknown knob" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		char line[128], buf[RN_CONF_WHY];
		const char *name, *value, *why;
		enum rn_conf_line got;

		snprintf(line, sizeof(line), "%s", rows[i].line);
		got = rn_conf_parse_line(line, &name, &value, &why, buf);
		if (got != rows[i].want)
			fail_msg("line \"%s\": kind %d, want %d (%s)", rows[i].line, got,
				 rows[i].want, why ? why : "");
		if (rows[i].name)
			assert_string_equal(name, rows[i].name);
		if (rows[i].value)
			assert_string_equal(value, rows[i].value);
		if (rows[i].why && (!why || !strstr(why, rows[i].why)))
			fail_msg("line \"%s\": why \"%s\", want \"%s\"", rows[i].line,
				 why ? why : "(none)", rows[i].why);
		if (!rows[i].why)
			assert_null(why);
	}
}

/* default < file < environment < socket option, knob by knob. */
static void test_conf_precedence(void **state)
{
	static const struct {
		const char *file, *env; /* RI2N_HEARTBEAT_MS's line and variable, NULL: none */
		int64_t want;
		int from;
	} rows[] = {
		{ NULL, NULL, 100, RN_FROM_DEFAULT },
		{ "250", NULL, 250, RN_FROM_FILE },
		{ NULL, "300", 300, RN_FROM_ENV },
		{ "250", "300", 300, RN_FROM_ENV },
		{ "250", "", 250, RN_FROM_FILE },        /* an empty variable is unset */
		{ "70000", NULL, 100, RN_FROM_DEFAULT }, /* a bad line: the default */
		{ "70000", "300", 300, RN_FROM_ENV },    /* ...or the environment's value */
		{ "250", "0", 100, RN_FROM_DEFAULT },    /* a bad variable: the default, as before */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		char text[128];
		rn_config c;
		rn_knob_from from[RN_KNOB__COUNT];
		int64_t v = 0;

		snprintf(text, sizeof(text), "RI2N_KEEPALIVE_MS = 50\n%s%s\n",
			 rows[i].file ? "RI2N_HEARTBEAT_MS = " : "# none",
			 rows[i].file ? rows[i].file : "");
		conf_file(text, 0644);
		if (rows[i].env)
			setenv("RI2N_HEARTBEAT_MS", rows[i].env, 1);
		else
			unsetenv("RI2N_HEARTBEAT_MS");
		rn_config_default(&c);
		capture();
		rn_knobs_apply(&c, from);
		captured();
		assert_int_equal(rn_knob_get(&c, RI2N_HEARTBEAT_MS, &v), 0);
		if (v != rows[i].want || from[RN_KNOB_HEARTBEAT_MS].from != rows[i].from)
			fail_msg("row %zu: %lld from %d, want %lld from %d", i, (long long)v,
				 from[RN_KNOB_HEARTBEAT_MS].from, (long long)rows[i].want,
				 rows[i].from);
		if (rows[i].from == RN_FROM_FILE)
			assert_int_equal(from[RN_KNOB_HEARTBEAT_MS].line, 2);
		/* the file's other line holds in every row */
		assert_true(c.keepalive_ns == 50 * UT_MS);
		assert_int_equal(from[RN_KNOB_KEEPALIVE_MS].from, RN_FROM_FILE);
		/* a socket option wins over both */
		assert_int_equal(rn_knob_set(&c, RI2N_HEARTBEAT_MS, 7), 0);
		assert_true(c.heartbeat_ns == 7 * UT_MS);
		unlink(g_path);
	}
	unsetenv("RI2N_HEARTBEAT_MS");

	/* a process's knobs: numbers and text the same way */
	conf_file("RI2N_STAT_MS = 40\nRI2N_RAILS = r1,r2\nRI2N_GSO = 0\n", 0600);
	assert_true(rn_proc_get(RN_PROC_STAT_MS) == 40);
	assert_true(rn_proc_get(RN_PROC_GSO) == 0);
	assert_string_equal(rn_proc_text(RN_PROC_RAILS), "r1,r2");
	assert_null(rn_proc_text(RN_PROC_CPU));
	setenv("RI2N_RAILS", "r3", 1);
	assert_string_equal(rn_proc_text(RN_PROC_RAILS), "r3");
	unsetenv("RI2N_RAILS");
	unlink(g_path);
}

/* Bad lines: each reported once, with the file and its line number. */
static void test_conf_bad_lines(void **state)
{
	char want[128];
	rn_config c;

	(void)state;
	conf_file("# site settings\n"
		  "RI2N_MTU = 9000\n"
		  "RI2N_MTU 9000\n"
		  "\n"
		  "RI2N_NOPE = 1\n"
		  "RI2N_DEAD_PEER_MS = 5\n" /* in range, but not above the rail timeout */
		  "RI2N_FAIL_WINDOW = 0\n",
		  0644);
	rn_config_default(&c);
	capture();
	rn_knobs_from_env(&c);
	rn_knobs_from_env(&c); /* read again: reported again only where the value is applied */
	rn_proc_get(RN_PROC_STAT_MS);
	captured();
	snprintf(want, sizeof(want), "%s:3: not NAME = value", g_path);
	assert_int_equal(count_err(want), 1);
	snprintf(want, sizeof(want), "%s:5: RI2N_NOPE: unknown knob", g_path);
	assert_int_equal(count_err(want), 1);
	snprintf(want, sizeof(want), "%s:7: RI2N_FAIL_WINDOW: 0 is not an integer from 2", g_path);
	assert_int_equal(count_err(want), 1);
	snprintf(want, sizeof(want), "%s:6: RI2N_DEAD_PEER_MS = 5 is not valid", g_path);
	assert_true(count_err(want) >= 1);
	assert_int_equal(count_err("line ignored"), 3);
	assert_int_equal(c.max_dgram, 8972);               /* the good line holds */
	assert_true(c.dead_peer_ns == 30000 * UT_MS);      /* the bad ones: defaults */
	assert_int_equal(c.fail_window, 100);
	unlink(g_path);
}

/* A file that is missing, unreadable or untrusted: reported, never fatal. */
static void test_conf_unreadable(void **state)
{
	rn_config c;
	char want[160];

	(void)state;
	/* missing */
	setenv("RI2N_CONF", "/nonexistent/ri2n.conf", 1);
	rn_conf_reset();
	capture();
	rn_config_default(&c);
	rn_knobs_from_env(&c);
	assert_true(rn_proc_get(RN_PROC_STAT_MS) == 250);
	captured();
	assert_int_equal(count_err("cannot read the configuration file /nonexistent/ri2n.conf"), 1);
	assert_non_null(strstr(rn_conf_state(), "ignored"));

	/* writable by others: not trusted */
	conf_file("RI2N_STAT_MS = 40\n", 0666);
	capture();
	assert_true(rn_proc_get(RN_PROC_STAT_MS) == 250);
	captured();
	snprintf(want, sizeof(want), "%s is writable by its group or others", g_path);
	assert_int_equal(count_err(want), 1);
	unlink(g_path);

	/* a directory */
	setenv("RI2N_CONF", "/tmp", 1);
	rn_conf_reset();
	capture();
	assert_true(rn_proc_get(RN_PROC_STAT_MS) == 250);
	captured();
	assert_int_equal(count_err("/tmp is not a regular file"), 1);

	/* owned by someone else (root may give it away) */
	if (geteuid() == 0) {
		conf_file("RI2N_STAT_MS = 40\n", 0644);
		assert_int_equal(chown(g_path, 4242, 4242), 0);
		capture();
		assert_true(rn_proc_get(RN_PROC_STAT_MS) == 250);
		captured();
		assert_int_equal(count_err("owned by another user"), 1);
		unlink(g_path);
	}
}

/* RI2N_CONF: another file; empty or /dev/null, none (and nothing said). */
static void test_conf_path(void **state)
{
	(void)state;
	conf_file("RI2N_STAT_MS = 40\n", 0644);
	assert_string_equal(rn_conf_path(), g_path);
	assert_string_equal(rn_conf_state(), "read");
	assert_true(rn_proc_get(RN_PROC_STAT_MS) == 40);
	unlink(g_path);
	for (int i = 0; i < 2; i++) {
		setenv("RI2N_CONF", i ? "/dev/null" : "", 1);
		rn_conf_reset();
		capture();
		assert_true(rn_proc_get(RN_PROC_STAT_MS) == 250);
		assert_string_equal(rn_conf_path(), "");
		assert_string_equal(rn_conf_state(), "none");
		captured();
		assert_string_equal(g_err, "");
	}
	unsetenv("RI2N_CONF"); /* the system's file, present or not */
	rn_conf_reset();
	capture();
	assert_string_equal(rn_conf_path(), RN_CONF_PATH);
	captured();
	if (access(RN_CONF_PATH, F_OK) != 0)
		assert_string_equal(g_err, ""); /* none installed: nothing to say */
}

/* The key: never in the file (refused, as an unusable key is); its file, named there. */
static void test_conf_key(void **state)
{
	static const char hex[] = "000102030405060708090a0b0c0d0e0f"
				  "101112131415161718191a1b1c1d1e1f";
	char key_path[64] = "/tmp/ri2n-test-key.XXXXXX", text[128];
	rn_config c;
	int fd;

	(void)state;
	unsetenv("RI2N_KEY");
	unsetenv("RI2N_KEY_FILE");
	conf_file("RI2N_KEY = 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
		  0600);
	rn_config_default(&c);
	capture();
	assert_int_equal(rn_knobs_key_from_env(&c), -EINVAL);
	captured();
	assert_false(c.keyed);
	assert_null(strstr(g_err, "0c0d0e0f")); /* never the key */
	assert_non_null(strstr(g_err, "refusing to run without the key"));
	setenv("RI2N_KEY", hex, 1); /* the environment's key wins over the bad line */
	assert_int_equal(rn_knobs_key_from_env(&c), 0);
	assert_true(c.keyed);
	unsetenv("RI2N_KEY");
	unlink(g_path);

	fd = mkstemp(key_path);
	assert_true(fd >= 0);
	assert_true(write(fd, hex, strlen(hex)) == (ssize_t)strlen(hex));
	close(fd);
	snprintf(text, sizeof(text), "RI2N_KEY_FILE = %s\n", key_path);
	conf_file(text, 0644);
	rn_config_default(&c);
	assert_int_equal(rn_knobs_key_from_env(&c), 0); /* mkstemp made it 0600 */
	assert_true(c.keyed);
	chmod(key_path, 0644); /* the key file's own checks stand */
	rn_config_default(&c);
	capture();
	assert_int_equal(rn_knobs_key_from_env(&c), -EINVAL);
	captured();
	assert_false(c.keyed);
	unlink(key_path);
	unlink(g_path);
}

static int teardown(void **state)
{
	(void)state;
	if (*g_path)
		unlink(g_path); /* also after a failed assertion */
	unsetenv("RI2N_CONF");
	rn_conf_reset();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_conf_lines, teardown),
		cmocka_unit_test_teardown(test_conf_precedence, teardown),
		cmocka_unit_test_teardown(test_conf_bad_lines, teardown),
		cmocka_unit_test_teardown(test_conf_unreadable, teardown),
		cmocka_unit_test_teardown(test_conf_path, teardown),
		cmocka_unit_test_teardown(test_conf_key, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
