/* SPDX-License-Identifier: BSD-3-Clause */
/* What the benchmarks of tests/bench share. */
#ifndef BENCH_H
#define BENCH_H

#include <stdlib.h>

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median of v[0..n), which it sorts. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
