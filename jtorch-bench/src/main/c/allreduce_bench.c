/* Raw Open MPI all-reduce timing, the baseline for jtorch's mpi backend (scripts/bench-allreduce):
 * MPI_Allreduce in place on float32 buffers of 4 KiB to 64 MiB, median of the timed repetitions, printed by rank 0
 * as "bytes median_seconds". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (long bytes = 4096; bytes <= 64L << 20; bytes *= 4) {
        long n = bytes / 4;
        int reps = bytes <= (1 << 20) ? 200 : 20;
        float *buf = malloc(bytes);
        for (long i = 0; i < n; i++) buf[i] = 1.0f;
        double *t = malloc(sizeof(double) * reps);
        for (int w = 0; w < 5; w++) MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double s = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            t[r] = MPI_Wtime() - s;
        }
        qsort(t, reps, sizeof(double), cmp);
        if (rank == 0) printf("%ld %.9f\n", bytes, t[reps / 2]);
        free(buf);
        free(t);
    }
    MPI_Finalize();
    return 0;
}
