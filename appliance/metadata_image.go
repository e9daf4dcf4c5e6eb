package appliance

// The metadata image and its records are appliance/metadata's; the names
// below are the ones the rest of appliance uses for them.

import "github.com/ringbroker/ringbroker/appliance/metadata"

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
// their packages' rules (security_glue.go).
func emptyImage() *Image { return metadata.NewImage(imageChecks{}) }
