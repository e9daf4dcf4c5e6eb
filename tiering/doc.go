// Package tiering will own object stores (S3 through aws-sdk-go-v2 and a
// filesystem backend) and the remote log manager that uploads rolled
// segments below the high watermark and serves fetches below the local log
// start offset (KIP-405). It imports nvme, ioring and numa, never appliance
// or cluster.
package tiering
