/*
 * The C baseline of bench/distributed.ts: MPI_Allreduce (float, MPI_SUM, MPI_COMM_WORLD) of
 * separate send and receive buffers, the call Stagecraft's allReduce op makes, timed on the same
 * sizes with the same iteration counts, each call timed alone. Prints one line per size on
 * rank 0 (the slowest rank's median call):
 *     bytes <B> iters <K> seconds_per_call <S>
 * Built by the benchmark at run time: mpicc -O2 -o allreduce allreduce.c
 * Usage: mpirun -np N ./allreduce BYTES:ITERS [BYTES:ITERS ...]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int a = 1; a < argc; a++) {
    long bytes = 0, iters = 0;
    if (sscanf(argv[a], "%ld:%ld", &bytes, &iters) != 2 || bytes < 4 || iters < 1) {
      if (rank == 0) fprintf(stderr, "bad size argument %s (want BYTES:ITERS)\n", argv[a]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int count = (int)(bytes / 4);
    float *send = malloc((size_t)count * sizeof(float));
    float *recv = malloc((size_t)count * sizeof(float));
    for (int i = 0; i < count; i++) send[i] = (float)((i % 97) * 0.25 + rank);
    /* warm-up: connections, pages of both buffers */
    for (int w = 0; w < 2; w++) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double *times = malloc((size_t)iters * sizeof(double));
    for (long k = 0; k < iters; k++) {
      double t0 = MPI_Wtime();
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      times[k] = MPI_Wtime() - t0;
    }
    /* the median call (robust to the preemptions of a shared machine) */
    qsort(times, (size_t)iters, sizeof(double), by_value);
    double t = times[iters / 2];
    free(times);
    /* the slowest rank's median: the call is done when every rank has its result */
    double slowest;
    MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("bytes %ld iters %ld seconds_per_call %.9g\n", bytes, iters, slowest);
    fflush(stdout);
    free(send);
    free(recv);
  }
  MPI_Finalize();
  return 0;
}
