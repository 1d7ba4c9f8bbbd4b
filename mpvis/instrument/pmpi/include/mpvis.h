/* mpvis.h: optional program variables for mpvis predicates, from C and C++.
 *
 * A compiled program needs no change to be traced by `mpvis run`.  To use
 * global predicates on program variables (docs/cones-predicates.md), record
 * them where they change:
 *
 *     #include "mpvis.h"
 *     MPVIS_STATE_INT("x", x);
 *     MPVIS_STATE_STR("phase", "update");
 *
 * Each is one `state` record of the calling rank (its variables keep their
 * last value).  The functions live in mpvis's trace library and are declared
 * weak here: a program built with this header runs unchanged without mpvis,
 * where the macros do nothing.  Copy the header next to your sources or add
 * `-I$(python -c "import mpvis, os; print(os.path.dirname(mpvis.__file__))")/instrument/pmpi/include`.
 */
#ifndef MPVIS_H
#define MPVIS_H

#ifdef __cplusplus
extern "C" {
#endif

void mpvis_state_int(const char *name, long long value) __attribute__((weak));
void mpvis_state_double(const char *name, double value) __attribute__((weak));
void mpvis_state_str(const char *name, const char *value) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#define MPVIS_STATE_INT(name, value) \
    do { if (mpvis_state_int) mpvis_state_int((name), (long long)(value)); } while (0)
#define MPVIS_STATE_DOUBLE(name, value) \
    do { if (mpvis_state_double) mpvis_state_double((name), (double)(value)); } while (0)
#define MPVIS_STATE_STR(name, value) \
    do { if (mpvis_state_str) mpvis_state_str((name), (value)); } while (0)

#endif
