package controller

// ValidateTopicName reports whether name is a legal topic name under Kafka's rules, so the
// broker can answer INVALID_TOPIC_EXCEPTION without a proposal (e.g. for Metadata requests).
func ValidateTopicName(name string) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	return nil
}
