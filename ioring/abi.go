package ioring

// Kernel ABI of io_uring: constants and structure layouts from
// include/uapi/linux/io_uring.h (io_uring_setup(2), io_uring_enter(2),
// io_uring_register(2)). golang.org/x/sys/unix has the syscall numbers but
// not these, so they are declared here with the kernel's values; TestABILayout
// checks every structure size with unsafe.Sizeof. The layouts assume a
// little-endian 64-bit machine (amd64, arm64), which is all ringbroker runs on.

// Setup flags (io_uring_params.flags), io_uring_setup(2).
const (
	SetupIOPoll        uint32 = 1 << 0  // IORING_SETUP_IOPOLL: busy-poll completions (O_DIRECT block I/O only)
	SetupSQPoll        uint32 = 1 << 1  // IORING_SETUP_SQPOLL: a kernel thread polls the SQ
	SetupSQAff         uint32 = 1 << 2  // IORING_SETUP_SQ_AFF: sq_thread_cpu is valid
	SetupCQSize        uint32 = 1 << 3  // IORING_SETUP_CQSIZE: cq_entries is valid
	SetupClamp         uint32 = 1 << 4  // IORING_SETUP_CLAMP: clamp ring sizes to the maximum
	SetupAttachWQ      uint32 = 1 << 5  // IORING_SETUP_ATTACH_WQ: share wq_fd's io-wq
	SetupRDisabled     uint32 = 1 << 6  // IORING_SETUP_R_DISABLED: start disabled
	SetupSubmitAll     uint32 = 1 << 7  // IORING_SETUP_SUBMIT_ALL: keep submitting after a failed SQE
	SetupCoopTaskrun   uint32 = 1 << 8  // IORING_SETUP_COOP_TASKRUN: no IPI to run task work
	SetupTaskrunFlag   uint32 = 1 << 9  // IORING_SETUP_TASKRUN_FLAG: set IORING_SQ_TASKRUN when work waits
	SetupSQE128        uint32 = 1 << 10 // IORING_SETUP_SQE128
	SetupCQE32         uint32 = 1 << 11 // IORING_SETUP_CQE32
	SetupSingleIssuer  uint32 = 1 << 12 // IORING_SETUP_SINGLE_ISSUER: one task submits
	SetupDeferTaskrun  uint32 = 1 << 13 // IORING_SETUP_DEFER_TASKRUN: run task work only in GETEVENTS
	SetupNoMmap        uint32 = 1 << 14 // IORING_SETUP_NO_MMAP
	SetupRegisteredFD  uint32 = 1 << 15 // IORING_SETUP_REGISTERED_FD_ONLY
	SetupNoSQArray     uint32 = 1 << 16 // IORING_SETUP_NO_SQARRAY: SQEs are indexed by the SQ tail directly
	setupKnownFlagMask uint32 = 1<<17 - 1
)

// Feature bits (io_uring_params.features) reported by io_uring_setup(2).
const (
	FeatSingleMmap     uint32 = 1 << 0  // IORING_FEAT_SINGLE_MMAP: SQ and CQ rings share one mapping
	FeatNoDrop         uint32 = 1 << 1  // IORING_FEAT_NODROP: overflowed CQEs are kept, not dropped
	FeatSubmitStable   uint32 = 1 << 2  // IORING_FEAT_SUBMIT_STABLE
	FeatRWCurPos       uint32 = 1 << 3  // IORING_FEAT_RW_CUR_POS: offset -1 means the file position
	FeatCurPersonality uint32 = 1 << 4  // IORING_FEAT_CUR_PERSONALITY
	FeatFastPoll       uint32 = 1 << 5  // IORING_FEAT_FAST_POLL
	FeatPoll32Bits     uint32 = 1 << 6  // IORING_FEAT_POLL_32BITS
	FeatSQPollNonfixed uint32 = 1 << 7  // IORING_FEAT_SQPOLL_NONFIXED
	FeatExtArg         uint32 = 1 << 8  // IORING_FEAT_EXT_ARG: io_uring_enter takes a timeout
	FeatNativeWorkers  uint32 = 1 << 9  // IORING_FEAT_NATIVE_WORKERS
	FeatRsrcTags       uint32 = 1 << 10 // IORING_FEAT_RSRC_TAGS
	FeatCQESkip        uint32 = 1 << 11 // IORING_FEAT_CQE_SKIP
	FeatLinkedFile     uint32 = 1 << 12 // IORING_FEAT_LINKED_FILE
	FeatRegRegRing     uint32 = 1 << 13 // IORING_FEAT_REG_REG_RING
)

// Op is an io_uring opcode (enum io_uring_op).
type Op uint8

// Opcodes, in the kernel's order (enum io_uring_op).
const (
	OpNop            Op = iota // IORING_OP_NOP
	OpReadv                    // IORING_OP_READV
	OpWritev                   // IORING_OP_WRITEV
	OpFsync                    // IORING_OP_FSYNC
	OpReadFixed                // IORING_OP_READ_FIXED
	OpWriteFixed               // IORING_OP_WRITE_FIXED
	OpPollAdd                  // IORING_OP_POLL_ADD
	OpPollRemove               // IORING_OP_POLL_REMOVE
	OpSyncFileRange            // IORING_OP_SYNC_FILE_RANGE
	OpSendmsg                  // IORING_OP_SENDMSG
	OpRecvmsg                  // IORING_OP_RECVMSG
	OpTimeout                  // IORING_OP_TIMEOUT
	OpTimeoutRemove            // IORING_OP_TIMEOUT_REMOVE
	OpAccept                   // IORING_OP_ACCEPT
	OpAsyncCancel              // IORING_OP_ASYNC_CANCEL
	OpLinkTimeout              // IORING_OP_LINK_TIMEOUT
	OpConnect                  // IORING_OP_CONNECT
	OpFallocate                // IORING_OP_FALLOCATE
	OpOpenat                   // IORING_OP_OPENAT
	OpClose                    // IORING_OP_CLOSE
	OpFilesUpdate              // IORING_OP_FILES_UPDATE
	OpStatx                    // IORING_OP_STATX
	OpRead                     // IORING_OP_READ
	OpWrite                    // IORING_OP_WRITE
	OpFadvise                  // IORING_OP_FADVISE
	OpMadvise                  // IORING_OP_MADVISE
	OpSend                     // IORING_OP_SEND
	OpRecv                     // IORING_OP_RECV
	OpOpenat2                  // IORING_OP_OPENAT2
	OpEpollCtl                 // IORING_OP_EPOLL_CTL
	OpSplice                   // IORING_OP_SPLICE
	OpProvideBuffers           // IORING_OP_PROVIDE_BUFFERS
	OpRemoveBuffers            // IORING_OP_REMOVE_BUFFERS
	OpTee                      // IORING_OP_TEE
	OpShutdown                 // IORING_OP_SHUTDOWN
	OpRenameat                 // IORING_OP_RENAMEAT
	OpUnlinkat                 // IORING_OP_UNLINKAT
	OpMkdirat                  // IORING_OP_MKDIRAT
	OpSymlinkat                // IORING_OP_SYMLINKAT
	OpLinkat                   // IORING_OP_LINKAT
	OpMsgRing                  // IORING_OP_MSG_RING
	OpFsetxattr                // IORING_OP_FSETXATTR
	OpSetxattr                 // IORING_OP_SETXATTR
	OpFgetxattr                // IORING_OP_FGETXATTR
	OpGetxattr                 // IORING_OP_GETXATTR
	OpSocket                   // IORING_OP_SOCKET
	OpUringCmd                 // IORING_OP_URING_CMD
	OpSendZC                   // IORING_OP_SEND_ZC
	OpSendmsgZC                // IORING_OP_SENDMSG_ZC
)

// SQE flags (io_uring_sqe.flags).
const (
	SQEFixedFile      uint8  = 1 << 0 // IOSQE_FIXED_FILE: fd is an index into the registered files
	SQEIODrain        uint8  = 1 << 1 // IOSQE_IO_DRAIN
	SQEIOLink         uint8  = 1 << 2 // IOSQE_IO_LINK: the next SQE starts after this one succeeds
	SQEIOHardlink     uint8  = 1 << 3 // IOSQE_IO_HARDLINK
	SQEAsync          uint8  = 1 << 4 // IOSQE_ASYNC: go to io-wq at once
	SQEBufferSelect   uint8  = 1 << 5 // IOSQE_BUFFER_SELECT: pick a buffer from buf_group
	SQECQESkipSuccess uint8  = 1 << 6 // IOSQE_CQE_SKIP_SUCCESS
	spliceFdInFixed   uint32 = 1 << 31
	fileIndexAlloc    uint32 = ^uint32(0) // IORING_FILE_INDEX_ALLOC
	acceptMultishot   uint16 = 1 << 0     // IORING_ACCEPT_MULTISHOT (sqe.ioprio)
	recvsendPollFirst uint16 = 1 << 0     // IORING_RECVSEND_POLL_FIRST (sqe.ioprio)
	recvMultishot     uint16 = 1 << 1     // IORING_RECV_MULTISHOT (sqe.ioprio)
	recvsendFixedBuf  uint16 = 1 << 2     // IORING_RECVSEND_FIXED_BUF (sqe.ioprio)
	msgRingData       uint64 = 0          // IORING_MSG_DATA (sqe.addr)
	ringOffSQRing     int64  = 0          // IORING_OFF_SQ_RING
	ringOffCQRing     int64  = 0x8000000  // IORING_OFF_CQ_RING
	ringOffSQEs       int64  = 0x10000000 // IORING_OFF_SQES
	probeOpSupported  uint16 = 1 << 0     // IO_URING_OP_SUPPORTED
	probeOpsLen              = 256
	maxBufRingEntries        = 1 << 15
)

// Flags of IORING_OP_SEND_ZC (sqe.ioprio).
const (
	SendZCReportUsage uint16 = 1 << 3 // IORING_SEND_ZC_REPORT_USAGE: the notification's res says whether data was copied
	// NotifUsageZCCopied is set in the notification CQE's res when
	// SendZCReportUsage was asked for and the kernel had to copy (at least
	// part of) the data (IORING_NOTIF_USAGE_ZC_COPIED).
	NotifUsageZCCopied int32 = -1 << 31
)

// FsyncDataSync is IORING_FSYNC_DATASYNC (sqe.fsync_flags): fdatasync(2)
// instead of fsync(2).
const FsyncDataSync uint32 = 1 << 0

// Timeout flags (sqe.timeout_flags) for IORING_OP_TIMEOUT and TIMEOUT_REMOVE.
const (
	TimeoutAbs                uint32 = 1 << 0 // IORING_TIMEOUT_ABS: the timespec is an absolute time
	TimeoutUpdate             uint32 = 1 << 1 // IORING_TIMEOUT_UPDATE
	TimeoutBoottime           uint32 = 1 << 2 // IORING_TIMEOUT_BOOTTIME
	TimeoutRealtime           uint32 = 1 << 3 // IORING_TIMEOUT_REALTIME
	TimeoutETimeSuccessuint32        = 1 << 5 // IORING_TIMEOUT_ETIME_SUCCESS
	TimeoutMultishot          uint32 = 1 << 6 // IORING_TIMEOUT_MULTISHOT
)

// Cancel flags (sqe.cancel_flags) for IORING_OP_ASYNC_CANCEL.
const (
	CancelAll      uint32 = 1 << 0 // IORING_ASYNC_CANCEL_ALL: cancel every match, not only the first
	CancelFd       uint32 = 1 << 1 // IORING_ASYNC_CANCEL_FD: match on fd instead of user_data
	CancelAny      uint32 = 1 << 2 // IORING_ASYNC_CANCEL_ANY: match any request
	CancelFdFixed  uint32 = 1 << 3 // IORING_ASYNC_CANCEL_FD_FIXED: fd is a registered file index
	CancelUserData uint32 = 1 << 4 // IORING_ASYNC_CANCEL_USERDATA
	CancelOp       uint32 = 1 << 5 // IORING_ASYNC_CANCEL_OP
)

// CQE flags (io_uring_cqe.flags).
const (
	CQEFBuffer       uint32 = 1 << 0 // IORING_CQE_F_BUFFER: the upper 16 bits hold a provided buffer id
	CQEFMore         uint32 = 1 << 1 // IORING_CQE_F_MORE: more CQEs follow for the same SQE
	CQEFSockNonempty uint32 = 1 << 2 // IORING_CQE_F_SOCK_NONEMPTY: more data waits in the socket
	CQEFNotif        uint32 = 1 << 3 // IORING_CQE_F_NOTIF: a send-zc notification (buffer released)
	CQEBufferShift          = 16     // IORING_CQE_BUFFER_SHIFT
)

// SQ ring flags (sq_ring->flags), written by the kernel.
const (
	sqNeedWakeup uint32 = 1 << 0 // IORING_SQ_NEED_WAKEUP
	sqCQOverflow uint32 = 1 << 1 // IORING_SQ_CQ_OVERFLOW
	sqTaskrun    uint32 = 1 << 2 // IORING_SQ_TASKRUN
)

// io_uring_enter(2) flags.
const (
	enterGetEvents uint32 = 1 << 0 // IORING_ENTER_GETEVENTS
	enterSQWakeup  uint32 = 1 << 1 // IORING_ENTER_SQ_WAKEUP
	enterSQWait    uint32 = 1 << 2 // IORING_ENTER_SQ_WAIT
	enterExtArg    uint32 = 1 << 3 // IORING_ENTER_EXT_ARG
)

// io_uring_register(2) opcodes.
const (
	regBuffers      = 0  // IORING_REGISTER_BUFFERS
	unregBuffers    = 1  // IORING_UNREGISTER_BUFFERS
	regFiles        = 2  // IORING_REGISTER_FILES
	unregFiles      = 3  // IORING_UNREGISTER_FILES
	regFilesUpdate  = 6  // IORING_REGISTER_FILES_UPDATE
	regBuffers2     = 15 // IORING_REGISTER_BUFFERS2
	regBufUpdate    = 16 // IORING_REGISTER_BUFFERS_UPDATE
	regProbe        = 8  // IORING_REGISTER_PROBE
	regEnableRings  = 12 // IORING_REGISTER_ENABLE_RINGS
	regPbufRing     = 22 // IORING_REGISTER_PBUF_RING
	unregPbufRing   = 23 // IORING_UNREGISTER_PBUF_RING
	regPbufStatus   = 26 // IORING_REGISTER_PBUF_STATUS
	maxRegisterArgs = 1 << 16
	maxFixedBufs    = 1 << 14 // IORING_MAX_REG_BUFFERS
	maxFixedBufLen  = 1 << 30 // the kernel refuses a registered buffer over 1 GiB (EFAULT)

	rsrcRegisterSparse = 1 << 0 // IORING_RSRC_REGISTER_SPARSE
)

// sqRingOffsets is struct io_sqring_offsets.
type sqRingOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// cqRingOffsets is struct io_cqring_offsets.
type cqRingOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// params is struct io_uring_params.
type params struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFd         uint32
	resv         [3]uint32
	sqOff        sqRingOffsets
	cqOff        cqRingOffsets
}

// kernelTimespec is struct __kernel_timespec.
type kernelTimespec struct {
	sec, nsec int64
}

// getEventsArg is struct io_uring_getevents_arg, passed with IORING_ENTER_EXT_ARG.
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWaitUs uint32 // "pad" before 6.12
	ts        uint64
}

// probeOp is struct io_uring_probe_op.
type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

// probeHdr is struct io_uring_probe without its flexible ops[] array.
type probeHdr struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
}

// probeBuf is struct io_uring_probe followed by room for every opcode.
type probeBuf struct {
	probeHdr
	ops [probeOpsLen]probeOp
}

// bufRingEntry is struct io_uring_buf. Entry 0's resv field doubles as the
// ring's tail (struct io_uring_buf_ring).
type bufRingEntry struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// bufReg is struct io_uring_buf_reg, the argument of IORING_REGISTER_PBUF_RING.
type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// filesUpdate is struct io_uring_files_update (IORING_REGISTER_FILES_UPDATE).
type filesUpdate struct {
	offset uint32
	resv   uint32
	fds    uint64
}

// rsrcRegister is struct io_uring_rsrc_register (IORING_REGISTER_BUFFERS2).
type rsrcRegister struct {
	nr    uint32
	flags uint32
	resv2 uint64
	data  uint64
	tags  uint64
}

// rsrcUpdate2 is struct io_uring_rsrc_update2 (IORING_REGISTER_BUFFERS_UPDATE).
type rsrcUpdate2 struct {
	offset uint32
	resv   uint32
	data   uint64
	tags   uint64
	nr     uint32
	resv2  uint32
}

// Sizes the kernel expects; TestABILayout compares them with unsafe.Sizeof.
const (
	sizeofSQE          = 64
	sizeofCQE          = 16
	sizeofParams       = 120
	sizeofGetEventsArg = 24
	sizeofProbeHdr     = 16
	sizeofProbeOp      = 8
	sizeofBufRingEntry = 16
	sizeofBufReg       = 40
	sizeofFilesUpdate  = 16
)
