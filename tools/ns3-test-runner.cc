// Runs ns-3's TestRunner over the test suites linked into this program (the eidolon module's).
#include "ns3/test.h"

int
main(int argc, char* argv[])
{
    return ns3::TestRunner::Run(argc, argv);
}
