/*
 * rn_log.h - ri2n's log, shared by every driver (the engine, the BTL, the
 * provider): one line per event a person should see, never one per packet.
 * RI2N_LOG=debug|info|warn|error|off (default warn) chooses what goes to
 * stderr; a program can take the lines instead.
 */
#ifndef RN_LOG_H
#define RN_LOG_H

enum rn_log_level { RN_LOG_DEBUG, RN_LOG_INFO, RN_LOG_WARN, RN_LOG_ERROR, RN_LOG_OFF };

void rn_log_init(void);
int rn_log_enabled(int level);
void rn_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rn_debug(...) do { if (rn_log_enabled(RN_LOG_DEBUG)) rn_log(RN_LOG_DEBUG, __VA_ARGS__); } while (0)
#define rn_info(...) do { if (rn_log_enabled(RN_LOG_INFO)) rn_log(RN_LOG_INFO, __VA_ARGS__); } while (0)
#define rn_warn(...) rn_log(RN_LOG_WARN, __VA_ARGS__)
#define rn_error(...) rn_log(RN_LOG_ERROR, __VA_ARGS__)

#endif
