package appliance

// The metadata image and its records are appliance/metadata's; the names
// below are the ones the rest of appliance uses for them.

import "github.com/ringbroker/ringbroker/appliance/metadata"

// metadataTopic is the metadata log's topic name.
const metadataTopic = metadata.Topic

type (
	// TopicID is metadata.TopicID.
	TopicID = metadata.TopicID
	// PartitionImage is metadata.PartitionImage.
	PartitionImage = metadata.PartitionImage
	// TopicImage is metadata.TopicImage.
	TopicImage = metadata.TopicImage
	// Image is metadata.Image.
	Image = metadata.Image
	// MetadataRecord is metadata.Record.
	MetadataRecord = metadata.Record
	// TopicRecord is metadata.TopicRecord.
	TopicRecord = metadata.TopicRecord
	// PartitionRecord is metadata.PartitionRecord.
	PartitionRecord = metadata.PartitionRecord
	// ConfigRecord is metadata.ConfigRecord.
	ConfigRecord = metadata.ConfigRecord
	// RemoveTopicRecord is metadata.RemoveTopicRecord.
	RemoveTopicRecord = metadata.RemoveTopicRecord
	// ProducerIDsRecord is metadata.ProducerIDsRecord.
	ProducerIDsRecord = metadata.ProducerIDsRecord
)

func newTopicID() TopicID { return metadata.NewTopicID() }

// emptyImage is the empty image, validating the concepts' records with
// their packages' rules (imageChecks).
func emptyImage() *Image { return metadata.NewImage(imageChecks{}) }

// commitErr gives a failed commit its Kafka error code:
// KAFKA_STORAGE_ERROR when the metadata log's storage failed, else
// UNKNOWN_SERVER_ERROR.
func commitErr(err error) error {
	return metadata.CommitError(err)
}
