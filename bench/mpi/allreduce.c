/*
 * The C baseline of bench/distributed.ts: MPI_Allreduce (float, MPI_SUM, MPI_COMM_WORLD) of
 * separate send and receive buffers, the call Stagecraft's allReduce op makes, timed on the same
 * sizes with the same numbers of calls, each call timed alone; and the same with MPI_IN_PLACE
 * (one buffer, the call of sc.distributed.allReduceInPlace).
 *
 * Built twice by the benchmark at run time, with mpicc into a temp dir:
 *   mpicc -O2 -o allreduce allreduce.c
 *       a program: mpirun -np N ./allreduce BYTES:CALLS ...; prints on rank 0, per size,
 *       "bytes B calls K median S best S" (seconds per call, the slowest rank's)
 *   mpicc -O2 -shared -fPIC -DSC_LIBRARY -o liballreduce.so allreduce.c
 *       the same timing loop as a function the benchmark's ranks call through koffi between
 *       their own measurements, so that C and Stagecraft are timed seconds apart in one job
 *       (on a machine shared with other jobs, separate jobs minutes apart see different loads)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/*
 * `calls` MPI_Allreduce calls of `count` floats after 2 warm-up calls and a barrier; this rank's
 * median and fastest call (seconds) in out[0], out[1]. `send` MPI_IN_PLACE: `recv` reduced in place.
 */
static void times_of(const void *send, float *recv, int count, int calls, double *out) {
  for (int w = 0; w < 2; w++) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double *times = malloc((size_t)calls * sizeof(double));
  for (int k = 0; k < calls; k++) {
    double t0 = MPI_Wtime();
    MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    times[k] = MPI_Wtime() - t0;
  }
  qsort(times, (size_t)calls, sizeof(double), by_value);
  out[0] = times[calls / 2];
  out[1] = times[0];
  free(times);
}

/* Separate send and receive buffers (the call the allReduce op makes). */
void sc_allreduce_times(const float *send, float *recv, int count, int calls, double *out) {
  times_of(send, recv, count, calls, out);
}

/* MPI_IN_PLACE on one buffer (the call sc.distributed.allReduceInPlace makes). */
void sc_allreduce_in_place_times(float *data, int count, int calls, double *out) {
  times_of(MPI_IN_PLACE, data, count, calls, out);
}

#ifndef SC_LIBRARY
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int a = 1; a < argc; a++) {
    long bytes = 0, calls = 0;
    if (sscanf(argv[a], "%ld:%ld", &bytes, &calls) != 2 || bytes < 4 || calls < 1) {
      if (rank == 0) fprintf(stderr, "bad size argument %s (want BYTES:CALLS)\n", argv[a]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int count = (int)(bytes / 4);
    float *send = malloc((size_t)count * sizeof(float));
    float *recv = malloc((size_t)count * sizeof(float));
    for (int i = 0; i < count; i++) send[i] = (float)((i % 97) * 0.25 + rank);
    double t[2], slowest[2];
    sc_allreduce_times(send, recv, count, (int)calls, t);
    /* the slowest rank's: a call is done when every rank has its result */
    MPI_Reduce(t, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("bytes %ld calls %ld median %.9g best %.9g\n", bytes, calls, slowest[0], slowest[1]);
    fflush(stdout);
    free(send);
    free(recv);
  }
  MPI_Finalize();
  return 0;
}
#endif
