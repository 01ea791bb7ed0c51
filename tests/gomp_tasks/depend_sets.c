/* mutexinoutset: such tasks on one address never overlap (any order), and are ordered
 * against in/out tasks like inout. (inoutset: GCC 12 cannot parse it; libgomp 12 still
 * implements GOMP_DEPEND_INOUTSET for newer compilers.) depobj objects (omp_depend_t) stand for their
 * dependence: in, then updated to inout, then destroyed. taskwait depend(in: a) waits for
 * a's writer only. */
#include "check.h"
#include <omp.h>

int main(void) {
    int x = 0, inside = 0, max_inside = 0, order_ok = 1;
#pragma omp parallel num_threads(4)
#pragma omp single
    {
#pragma omp task depend(out: x) shared(x)
        { pause_us(2000); x = 1; }
        for (int i = 0; i < 8; i++) {
#pragma omp task depend(mutexinoutset: x) shared(x, inside, max_inside, order_ok)
            {
                int now;
#pragma omp atomic capture
                now = ++inside;
#pragma omp critical
                if (now > max_inside) max_inside = now;
                if (x < 1) order_ok = 0; /* after the out task */
                pause_us(300);
#pragma omp atomic
                x++;
#pragma omp atomic
                inside--;
            }
        }
#pragma omp task depend(in: x) shared(x, order_ok)
        if (x != 9) order_ok = 0; /* after every mutexinoutset task */

        /* depobj */
        int d = 0, seen = -1;
        omp_depend_t obj;
#pragma omp depobj(obj) depend(inout: d)
#pragma omp task depend(depobj: obj) shared(d)
        { pause_us(1000); d = 7; }
#pragma omp depobj(obj) update(in)
#pragma omp task depend(depobj: obj) shared(d, seen)
        seen = d;
#pragma omp taskwait
#pragma omp depobj(obj) destroy
        CHECK(seen == 7);

        /* taskwait depend: waits (at least) for a's writer */
        int a = 0;
#pragma omp task depend(out: a) shared(a)
        { pause_us(2000); a = 5; }
#pragma omp taskwait depend(in: a)
        CHECK(a == 5);
    }
    CHECK(max_inside == 1);
    CHECK(order_ok);
    CHECK(x == 9);
    printf("depend_sets: ok\n");
    return 0;
}
