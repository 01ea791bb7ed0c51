/* depend(in/out/inout): per address, an out/inout task runs after every earlier sibling task
 * on that address and before every later one; in tasks run after the last earlier writer and
 * may overlap each other. Dependencies are among siblings only: a child depending on its
 * parent's address must not wait for the parent (no deadlock). An undeferred (if(0)) task
 * with depend clauses waits for its earlier siblings like a deferred one, mutexinoutset
 * included. Order holds over many addresses named again and again, while the runtime
 * forgets and reuses the dependency state of addresses whose tasks are complete. */
#include "check.h"
#include <omp.h>

#define N 64
#define ADDRS 1000
#define ROUNDS 8

/* Enter a region no two tasks may share: `*inside` counts the tasks in it, and one that
 * finds another there clears `*ok`. */
static void enter(int *inside, int *ok) {
    int was;
#pragma omp atomic capture
    was = (*inside)++;
    if (was != 0) {
#pragma omp atomic write
        *ok = 0;
    }
}

static void leave(int *inside) {
#pragma omp atomic update
    (*inside)--;
}

/* Rounds over ADDRS addresses: each step writes one address and reads the one before it,
 * so that a task names an address again just after a new address was named (when the
 * runtime may forget addresses whose tasks are complete). Each writer must see the value
 * its address's previous writer left (a*3 + round is not commutative), and each reader the
 * value of the writer before it, unchanged while it reads (the next writer waits for it).
 * Every fourth step's tasks sleep, so that they are still running when named again. */
static void many_addresses(void) {
    static unsigned a[ADDRS], want[ADDRS];
    int ok = 1;
    for (int k = 0; k < ADDRS; k++) a[k] = want[k] = k;
#pragma omp parallel num_threads(4)
#pragma omp single
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < ADDRS; k++) {
            unsigned before = want[k];
            want[k] = want[k] * 3 + r;
            long nap = k % 4 == 0 ? 100 : 0;
#pragma omp task depend(inout: a[k]) firstprivate(k, r, before, nap) shared(a, ok)
            {
                pause_us(nap);
                if (a[k] != before) {
#pragma omp atomic write
                    ok = 0;
                }
                a[k] = a[k] * 3 + r;
            }
            int j = (k + ADDRS - 1) % ADDRS;
            unsigned now = want[j];
#pragma omp task depend(in: a[j]) firstprivate(j, now, nap) shared(a, ok)
            {
                int seen = a[j] == now;
                pause_us(nap);
                if (!seen || a[j] != now) {
#pragma omp atomic write
                    ok = 0;
                }
            }
        }
    CHECK(ok);
    for (int k = 0; k < ADDRS; k++) CHECK(a[k] == want[k]);
}

int main(void) {
    int x = 0, y = 0, log_x[N], readers_ok = 1;
    int parent_child = 0;
    int z = 0, undeferred_ok = 1, m = 0, inside = 0, exclusive_ok = 1;
    int ma = 0, mb = 0, in_a = 0, held_ok = 1;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
        for (int i = 0; i < N; i++) {
            if (i % 4 == 3) {
                /* a reader: sees the value of the last writer before it */
                int want = i / 4 * 3 + 3;
#pragma omp task depend(in: x) firstprivate(want) shared(x, readers_ok)
                {
                    pause_us(50);
                    if (x != want) {
#pragma omp atomic write
                        readers_ok = 0;
                    }
                }
            } else {
#pragma omp task depend(inout: x) firstprivate(i) shared(x, log_x)
                {
                    pause_us(i % 3 * 100);
                    log_x[x] = i;
                    x++;
                }
            }
        }
        /* out after in: waits for all the readers above */
#pragma omp task depend(out: x) shared(x)
        x = -1;
        /* independent address: may run any time */
#pragma omp task depend(inout: y) shared(y)
        y = 1;
        /* a parent with inout(y2) whose child has inout(y2): the child is not the parent's
         * sibling, so it runs (the parent waits for it inside). */
        int y2 = 0;
#pragma omp task depend(inout: y2) shared(y2, parent_child)
        {
#pragma omp task depend(inout: y2) shared(y2)
            y2 = 41;
#pragma omp taskwait
            parent_child = y2 + 1;
        }
#pragma omp taskwait
        CHECK(parent_child == 42);
        for (int i = 0; i < 16; i++) {
#pragma omp task depend(inout: z) shared(z)
            {
                pause_us(50);
                z++;
            }
            /* a reader the undeferred writer below must wait for */
#pragma omp task depend(in: z) firstprivate(i) shared(z, undeferred_ok)
            {
                pause_us(100);
                if (z != 2 * i + 1) {
#pragma omp atomic write
                    undeferred_ok = 0;
                }
            }
#pragma omp task if(0) depend(inout: z) firstprivate(i) shared(z, undeferred_ok)
            {
                if (z != 2 * i + 1) undeferred_ok = 0;
                z++;
            }
        }
        /* mutexinoutset: an undeferred task is exclusive with its deferred set-mates */
        for (int i = 0; i < 16; i++) {
#pragma omp task depend(mutexinoutset: m) if(i % 2 == 0) shared(m, inside, exclusive_ok)
            {
                enter(&inside, &exclusive_ok);
                pause_us(50);
                m++;
                leave(&inside);
            }
        }
        /* ... for as long as its body runs: D (a and b) waits for b while the undeferred U
         * (a) starts; when E (b) ends during U's body, D must still wait for U. */
#pragma omp task depend(mutexinoutset: mb) shared(mb)
        {
            pause_us(2000);
            mb++;
        }
#pragma omp task depend(mutexinoutset: ma, mb) shared(ma, mb, in_a, held_ok)
        {
            enter(&in_a, &held_ok);
            ma++;
            mb++;
            leave(&in_a);
        }
#pragma omp task if(0) depend(mutexinoutset: ma) shared(ma, in_a, held_ok)
        {
            enter(&in_a, &held_ok);
            pause_us(5000);
            ma++;
            leave(&in_a);
        }
#pragma omp taskwait
        CHECK(undeferred_ok && z == 32);
        CHECK(held_ok && ma == 2 && mb == 2);
        CHECK(exclusive_ok && m == 16);
    }
    CHECK(readers_ok);
    CHECK(x == -1 && y == 1);
    /* writers ran in submission order */
    int k = 0;
    for (int i = 0; i < N; i++)
        if (i % 4 != 3) CHECK(log_x[k++] == i);
    many_addresses();
    printf("depend: ok\n");
    return 0;
}
