/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon: the egress queue of a lossless link (NVLink, NVSwitch, PCIe, InfiniBand, RoCE with
 * PFC): FIFO, ECN marking on the instantaneous queue, and no drops.
 */
#ifndef EIDOLON_LOSSLESS_ECN_QUEUE_DISC_H
#define EIDOLON_LOSSLESS_ECN_QUEUE_DISC_H

#include "ns3/queue-disc.h"
#include "ns3/random-variable-stream.h"

namespace ns3
{
namespace eidolon
{

/**
 * \ingroup eidolon
 * \brief FIFO queue disc that marks ECN-capable packets as RED does and never drops a packet for
 * congestion.
 *
 * A lossless fabric holds its backlog under link-level flow control (InfiniBand credits, PFC,
 * NVLink's credits) and marks ECN-capable packets for DCTCP and DCQCN. The marking is RED's
 * (Floyd and Jacobson 1993, as ns-3's RedQueueDisc with QW = 1: on the instantaneous queue):
 * none below MinTh; between MinTh and MaxTh a base chance p rising linearly to MaxP, spread over
 * the packets since the last mark (Wait, the default: gaps uniform between 1/p and 2/p packets);
 * Gentle (the default) rises on from MaxP at MaxTh to 1 at 2 MaxTh, otherwise every packet is
 * marked from MaxTh. Defaults as RedQueueDisc's, so ECN-capable packets are marked as before. A
 * packet that cannot carry a mark (not ECT: RDMA acknowledgements, NACKs and CNPs, TCP's pure
 * ACKs) is queued as it is: RedQueueDisc with UseEcn drops it where it would mark it, which on a
 * lossless link costs a flow a retransmission timeout the hardware never takes. Only MaxSize
 * drops (reason LIMIT_EXCEEDED_DROP), as any FIFO; the packet model sizes it so that a run never
 * reaches it.
 */
class LosslessEcnQueueDisc : public QueueDisc
{
public:
    static TypeId GetTypeId();
    LosslessEcnQueueDisc();
    ~LosslessEcnQueueDisc() override;

    /// Fixes the marking draws' random stream; returns the number of streams used (1).
    int64_t AssignStreams(int64_t stream);

    /// Reasons for marking and dropping (QueueDisc::Stats).
    static constexpr const char* UNFORCED_MARK = "Unforced mark"; //!< by chance
    static constexpr const char* FORCED_MARK = "Forced mark";     //!< above the marking range
    static constexpr const char* LIMIT_EXCEEDED_DROP = "Queue disc limit exceeded";

private:
    bool DoEnqueue(Ptr<QueueDiscItem> item) override;
    Ptr<QueueDiscItem> DoDequeue() override;
    Ptr<const QueueDiscItem> DoPeek() override;
    bool CheckConfig() override;
    void InitializeParams() override;

    /// RED's base chance of marking a packet that finds `queued` packets ahead of it.
    double BaseProbability(double queued) const;

    double m_minTh;   //!< packets: marking starts here
    double m_maxTh;   //!< packets: every ECN-capable packet is marked from here
    double m_maxP;    //!< base chance at MaxTh
    bool m_gentle;    //!< chance rising from MaxP at MaxTh to 1 at 2 MaxTh (else 1 from MaxTh)
    bool m_wait;      //!< marks at least 1 / p packets apart (RED's wait option)
    uint32_t m_count; //!< packets since the last mark (RED's count)
    bool m_above;     //!< the previous packet found the queue at or above MinTh (RED's old)
    Ptr<UniformRandomVariable> m_uniform;
};

} // namespace eidolon
} // namespace ns3

#endif // EIDOLON_LOSSLESS_ECN_QUEUE_DISC_H
