// NCCL operations move the bytes the host wrote between live ranks under `eidolon run`
// (gpu-emu/README.md "Device memory and data"): cuda/data-ranks.cu checks every collective's
// result on every rank against values worked out from what each rank wrote, on two and three
// ranks (three-gpus.yaml: sum(0..2) = 3 is not a value a one-rank or two-rank mistake gives).
// It also checks that operations on buffers no rank wrote post no file in the run's data
// directory (the exchange board alone says they hold nothing), and that data only one rank wrote
// reaches every rank.
#define BOOST_TEST_MODULE bridge_data_runs
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace
{

const std::string kBin = EIDOLON_BIN_DIR;
const std::string kProgram = EIDOLON_BIN_DIR "/bridge-tests/data-ranks";

std::string
Slurp(const fs::path& path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Runs data-ranks on `gpus` GPUs of `topology`; returns the exit status, output in `out`.
int
RunRanks(const std::string& topology, int gpus, std::string* out, const std::string& env = "")
{
    std::string name = boost::unit_test::framework::current_test_case().p_name;
    fs::path dir =
        fs::temp_directory_path() / ("eidolon-data-test-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string command =
        "EIDOLON_GPU_SPEC_DIR=" EIDOLON_GPU_TEST_DIR
        "/gpus EIDOLON_HOST_SPEC_DIR=" EIDOLON_GPU_TEST_DIR
        "/hosts EIDOLON_HOST=TEST-HOST EIDOLON_HOST_CPU_SCALE=0 EIDOLON_TEST_ID_FILE=" +
        (dir / "id").string() + " " + env + " " + kBin +
        "/eidolon run --topology " EIDOLON_BRIDGE_TEST_DIR "/" + topology + " --gpus " +
        std::to_string(gpus) + " --progress off --out " + (dir / "out").string() + " -- " +
        kProgram + " >" + (dir / "log").string() + " 2>&1";
    int status = std::system(command.c_str());
    *out = Slurp(dir / "log");
    fs::remove_all(dir);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The number rank `rank` printed as "rank R name=N".
long long
PrintedNumber(const std::string& out, int rank, const std::string& name)
{
    std::string tag = "rank " + std::to_string(rank) + " " + name + "=";
    size_t at = out.find(tag);
    BOOST_REQUIRE_MESSAGE(at != std::string::npos, "no " << tag << " in:\n" << out);
    return std::stoll(out.substr(at + tag.size()));
}

} // namespace

BOOST_AUTO_TEST_CASE(collectives_move_host_written_data_between_three_ranks)
{
    std::string out;
    int status = RunRanks("three-gpus.yaml", 3, &out);
    BOOST_TEST_MESSAGE(out);
    BOOST_TEST(status == 0);
    for (int rank = 0; rank < 3; ++rank)
    {
        BOOST_TEST(out.find("rank " + std::to_string(rank) + " data: passed") != std::string::npos,
                   "rank " << rank << " did not pass:\n"
                           << out);
    }
}

BOOST_AUTO_TEST_CASE(collectives_move_host_written_data_between_two_ranks)
{
    std::string out;
    int status = RunRanks("two-gpus.yaml", 2, &out);
    BOOST_TEST(status == 0);
    for (int rank = 0; rank < 2; ++rank)
    {
        BOOST_TEST(out.find("rank " + std::to_string(rank) + " data: passed") != std::string::npos,
                   "rank " << rank << " did not pass:\n"
                           << out);
    }
}

// A host read of an NCCL result waits for the operation's end in virtual time whether the peer's
// data came late (the peer slept before its all-reduce) or was there already (the reader slept
// before reading): the same virtual read time. Before, the clock moved only when the data was
// late, so the time depended on how fast the peer ran.
BOOST_AUTO_TEST_CASE(a_host_read_waits_for_the_operation_however_late_the_data_comes)
{
    std::string late, early;
    BOOST_TEST(RunRanks("two-gpus.yaml", 2, &late, "EIDOLON_TEST_LATE_RANK=1") == 0);
    BOOST_TEST(RunRanks("two-gpus.yaml", 2, &early, "EIDOLON_TEST_SLOW_READ_RANK=0") == 0);
    BOOST_TEST(PrintedNumber(late, 0, "read_at_ns") == PrintedNumber(early, 0, "read_at_ns"));
    BOOST_TEST(PrintedNumber(late, 1, "read_at_ns") == PrintedNumber(early, 1, "read_at_ns"));
}
