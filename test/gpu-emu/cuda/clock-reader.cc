// A library that reads the monotonic clock, for the clocks test: named in
// EIDOLON_REAL_CLOCK_LIBRARIES its reads stay real on a driving thread (as Open MPI's and PSM's
// do), otherwise they are as virtual as the program's.
#include <ctime>

extern "C" double
ClockReaderNowUs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}
