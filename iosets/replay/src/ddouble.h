/* Double-double arithmetic: a value is hi + lo with |lo| <= ulp(hi) / 2, about
 * 106 bits of mantissa (Dekker 1971, Knuth TAOCP 4.2.2; the QD library's
 * "sloppy" variants). Plain C, no Python.
 *
 * The phase engine keeps its dates and its virtual clock in double-double: the
 * IO-SETS dynamics amplify a date error of a high-priority job by up to
 * p_high / p_low in the bytes of the low-priority jobs sharing the bandwidth,
 * and chains of such amplifications turn double rounding (1e-12 s at t = 1e4 s)
 * into microseconds. hi is always the double nearest to the value, so the
 * engine reports hi.
 *
 * Correct only with IEEE double arithmetic evaluated as written: no
 * -ffast-math. Products use fma() when the target has it (then contraction is
 * harmless), Dekker's split otherwise (then there is no fma to contract to). */
#ifndef IOSETS_DDOUBLE_H
#define IOSETS_DDOUBLE_H

#include <math.h>

typedef struct {
    double hi, lo;
} dd;

static inline dd dd_of(double a)
{
    return (dd){a, 0.0};
}

/* a + b exactly, for any a and b. */
static inline dd two_sum(double a, double b)
{
    double s = a + b;
    double bb = s - a;
    return (dd){s, (a - (s - bb)) + (b - bb)};
}

/* a + b exactly, when |a| >= |b| or a == 0. */
static inline dd quick_two_sum(double a, double b)
{
    double s = a + b;
    return (dd){s, b - (s - a)};
}

/* a * b exactly. */
static inline dd two_prod(double a, double b)
{
    double p = a * b;
#ifdef __FMA__
    return (dd){p, fma(a, b, -p)};
#else
    const double split = 134217729.0; /* 2^27 + 1 */
    double ta = split * a, tb = split * b;
    double ah = ta - (ta - a), bh = tb - (tb - b);
    double al = a - ah, bl = b - bh;
    return (dd){p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
#endif
}

static inline dd dd_add_d(dd a, double b)
{
    dd s = two_sum(a.hi, b);
    return quick_two_sum(s.hi, s.lo + a.lo);
}

static inline dd dd_add(dd a, dd b)
{
    dd s = two_sum(a.hi, b.hi);
    return quick_two_sum(s.hi, s.lo + a.lo + b.lo);
}

static inline dd dd_sub(dd a, dd b)
{
    return dd_add(a, (dd){-b.hi, -b.lo});
}

static inline dd dd_mul(dd a, dd b)
{
    dd p = two_prod(a.hi, b.hi);
    return quick_two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

static inline dd dd_mul_d(dd a, double b)
{
    dd p = two_prod(a.hi, b);
    return quick_two_sum(p.hi, p.lo + a.lo * b);
}

/* a / b: the double quotient plus one correction (QD's sloppy division, about 2^-104 relative). */
static inline dd dd_div(dd a, dd b)
{
    double q1 = a.hi / b.hi;
    dd r = dd_mul_d(b, q1);
    dd s = two_sum(a.hi, -r.hi);
    double q2 = (s.hi + (s.lo - r.lo + a.lo)) / b.hi;
    return quick_two_sum(q1, q2);
}

static inline int dd_less(dd a, dd b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

static inline int dd_less_eq(dd a, dd b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo <= b.lo);
}

static inline dd dd_min(dd a, dd b)
{
    return dd_less(b, a) ? b : a;
}

#endif
