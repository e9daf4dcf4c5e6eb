package ioring

// Socket ops: accept, recv, send, send-zc (io_uring_enter(2) opcodes
// IORING_OP_ACCEPT, _RECV, _SEND, _SEND_ZC; field use as in
// include/uapi/linux/io_uring.h). Each has an SQE Prep method and a Ring
// method that also registers a Handler and keeps the buffer alive until the
// op's last CQE.

// PrepAccept prepares IORING_OP_ACCEPT on listening socket fd without
// returning the peer address; flags are accept4(2) flags (SOCK_CLOEXEC,
// SOCK_NONBLOCK). CQE res: the new fd, or -errno.
func (s *SQE) PrepAccept(fd int, flags int) {
	s.prepRW(OpAccept, fd, 0, 0, 0)
	s.OpFlags = uint32(flags)
}

// PrepAcceptMultishot is PrepAccept with IORING_ACCEPT_MULTISHOT (Linux
// 5.19): one CQE per accepted connection with CQEFMore set while the accept
// stays armed; a CQE without More (an error) ends it.
func (s *SQE) PrepAcceptMultishot(fd int, flags int) {
	s.PrepAccept(fd, flags)
	s.IoPrio |= acceptMultishot
}

// PrepRecv prepares IORING_OP_RECV into b; flags are recv(2) MSG_* flags.
// CQE res: bytes received (0 at EOF), or -errno (ECONNRESET, EAGAIN with
// MSG_DONTWAIT, ECANCELED).
func (s *SQE) PrepRecv(fd int, b []byte, flags int) {
	s.prepRW(OpRecv, fd, bufAddr(b), uint32(len(b)), 0)
	s.OpFlags = uint32(flags)
}

// PrepRecvSelect prepares a single-shot IORING_OP_RECV whose buffer (at most
// maxLen bytes, 0 for the buffer's size) the kernel picks from provided
// buffer group (IOSQE_BUFFER_SELECT). The CQE carries the buffer id
// (CQE.BufferID), or -ENOBUFS when the group is empty.
func (s *SQE) PrepRecvSelect(fd int, group uint16, maxLen uint32, flags int) {
	s.prepRW(OpRecv, fd, 0, maxLen, 0)
	s.OpFlags = uint32(flags)
	s.Flags |= SQEBufferSelect
	s.BufIndex = group
}

// PrepRecvMultishot prepares a multishot IORING_OP_RECV (Linux 6.0,
// IORING_RECV_MULTISHOT) fed from provided buffer group: one CQE per
// received chunk, each with a buffer id and CQEFMore while armed. It ends
// with a CQE without More: res 0 at EOF, -ENOBUFS when the group ran dry
// (recycle buffers and re-arm), or another -errno.
func (s *SQE) PrepRecvMultishot(fd int, group uint16, flags int) {
	s.PrepRecvSelect(fd, group, 0, flags)
	s.IoPrio |= recvMultishot
}

// PrepSend prepares IORING_OP_SEND of b; flags are send(2) MSG_* flags
// (MSG_NOSIGNAL, MSG_WAITALL to retry short sends). CQE res: bytes sent or
// -errno.
func (s *SQE) PrepSend(fd int, b []byte, flags int) {
	s.prepRW(OpSend, fd, bufAddr(b), uint32(len(b)), 0)
	s.OpFlags = uint32(flags)
}

// PrepSendZC prepares IORING_OP_SEND_ZC (Linux 6.0): a send whose pages the
// network stack references instead of copying. zcFlags are sqe.ioprio flags
// (SendZCReportUsage). It posts two CQEs with the same user_data: the result
// (bytes sent or -errno) with CQEFMore set, then a notification
// (CQEFNotif, no More) once the kernel no longer reads b. Until then b must
// not be reused. Addr is the data pointer of b, never the slice header.
func (s *SQE) PrepSendZC(fd int, b []byte, flags int, zcFlags uint16) {
	s.prepRW(OpSendZC, fd, bufAddr(b), uint32(len(b)), 0)
	s.OpFlags = uint32(flags)
	s.IoPrio = zcFlags
}

// PrepSendZCFixed is PrepSendZC from registered buffer bufIndex
// (IORING_RECVSEND_FIXED_BUF); b must lie inside that buffer.
func (s *SQE) PrepSendZCFixed(fd int, b []byte, flags int, zcFlags uint16, bufIndex uint16) {
	s.PrepSendZC(fd, b, flags, zcFlags|recvsendFixedBuf)
	s.BufIndex = bufIndex
}

// Accept starts an accept on fd (see PrepAccept) and returns its user_data.
func (r *Ring) Accept(fd int, flags int, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepAccept(fd, flags)
	s.UserData = ud
	return ud, nil
}

// AcceptMultishot starts a multishot accept on fd (see PrepAcceptMultishot).
func (r *Ring) AcceptMultishot(fd int, flags int, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepAcceptMultishot(fd, flags)
	s.UserData = ud
	return ud, nil
}

// Recv starts a recv into b (see PrepRecv); b is kept alive and pinned
// until the CQE.
func (r *Ring) Recv(fd int, b []byte, flags int, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, bufPtr(b), nil)
	if err != nil {
		return 0, err
	}
	s.PrepRecv(fd, b, flags)
	s.UserData = ud
	return ud, nil
}

// RecvMultishot starts a multishot recv from buffer ring br (see
// PrepRecvMultishot). The handler gets each chunk's buffer with
// br.Buf(id, n) and gives it back with br.Recycle(id).
func (r *Ring) RecvMultishot(fd int, br *BufRing, flags int, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepRecvMultishot(fd, br.Group(), flags)
	s.UserData = ud
	return ud, nil
}

// Send starts a send of b (see PrepSend); b is kept alive until the CQE.
func (r *Ring) Send(fd int, b []byte, flags int, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, bufPtr(b), nil)
	if err != nil {
		return 0, err
	}
	s.PrepSend(fd, b, flags)
	s.UserData = ud
	return ud, nil
}

// SendZC starts a zero-copy send of b (see PrepSendZC). The ring keeps b
// alive and pinned until the notification CQE; the handler sees the result
// CQE (More set) and then the notification (Notif set), and must not reuse
// b before the notification.
func (r *Ring) SendZC(fd int, b []byte, flags int, zcFlags uint16, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, bufPtr(b), nil)
	if err != nil {
		return 0, err
	}
	s.PrepSendZC(fd, b, flags, zcFlags)
	s.UserData = ud
	return ud, nil
}

// PrepPollAdd prepares a single-shot IORING_OP_POLL_ADD on fd for events
// (POLLIN, POLLOUT, ...: poll(2) bits, in the SQE's poll32_events). CQE
// res: the ready events (revents), or -errno (-ECANCELED when cancelled).
func (s *SQE) PrepPollAdd(fd int, events uint32) {
	s.prepRW(OpPollAdd, fd, 0, 0, 0)
	s.OpFlags = events
}

// PollAdd starts a single-shot poll of fd for events (see PrepPollAdd).
func (r *Ring) PollAdd(fd int, events uint32, h Handler) (uint64, error) {
	s, _, ud, err := r.start(h, nil, nil)
	if err != nil {
		return 0, err
	}
	s.PrepPollAdd(fd, events)
	s.UserData = ud
	return ud, nil
}
