// Unit parsing for topology files: expected values are the unit definitions worked out by hand.
#define BOOST_TEST_MODULE units
#include "topology.h"

#include <boost/test/unit_test.hpp>

using namespace ns3::eidolon;

BOOST_AUTO_TEST_CASE(bandwidth_bits_and_bytes)
{
    // 400 Gb/s is 400e9 bits/s = 50e9 bytes/s; "GB/s" means bytes.
    BOOST_TEST(ParseBandwidth("400Gbps") == 50e9);
    BOOST_TEST(ParseBandwidth("400 Gb/s") == 50e9);
    BOOST_TEST(ParseBandwidth("450GB/s") == 450e9);
    BOOST_TEST(ParseBandwidth("64GBps") == 64e9);
    BOOST_TEST(ParseBandwidth("1.6Tbps") == 200e9);
    BOOST_CHECK_THROW(ParseBandwidth("fast"), TopologyError);
    BOOST_CHECK_THROW(ParseBandwidth("0Gbps"), TopologyError);
    BOOST_CHECK_THROW(ParseBandwidth("-5GB/s"), TopologyError);
    BOOST_CHECK_THROW(ParseBandwidth("10 furlongs"), TopologyError);
}

BOOST_AUTO_TEST_CASE(latency)
{
    BOOST_TEST(ParseLatencyNs("500ns") == 500);
    BOOST_TEST(ParseLatencyNs("1us") == 1000);
    BOOST_TEST(ParseLatencyNs("1.5 us") == 1500);
    BOOST_TEST(ParseLatencyNs("2ms") == 2000000);
    BOOST_TEST(ParseLatencyNs("0") == 0);
    BOOST_CHECK_THROW(ParseLatencyNs("5"), TopologyError); // a bare number has no unit
    BOOST_CHECK_THROW(ParseLatencyNs("soon"), TopologyError);
}

BOOST_AUTO_TEST_CASE(sizes)
{
    BOOST_TEST(ParseBytes("80GiB") == 80ULL * 1024 * 1024 * 1024);
    BOOST_TEST(ParseBytes("141GB") == 141000000000ULL);
    BOOST_TEST(ParseBytes("4096") == 4096ULL);
    BOOST_CHECK_THROW(ParseBytes("lots"), TopologyError);
}
