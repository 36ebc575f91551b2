/*
 * ri2n.h - reliable byte streams over several Ethernet rails.
 */
#ifndef RI2N_H
#define RI2N_H

#ifdef __cplusplus
extern "C" {
#endif

#define RI2N_API __attribute__((visibility("default")))

/* The library version as "MAJOR.MINOR.PATCH". */
RI2N_API const char *ri2n_version(void);

#ifdef __cplusplus
}
#endif

#endif
