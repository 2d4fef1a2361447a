package workloads

import "strings"

// The names consumers read their group ID from.
//
// Environment variables (exact names):
//   - SPRING_KAFKA_CONSUMER_GROUP_ID, SPRING_KAFKA_CONSUMER_GROUPID: Spring
//     Boot's spring.kafka.consumer.group-id through relaxed binding from
//     the environment ("replace dots with underscores, remove dashes,
//     uppercase": Spring Boot reference, Externalized Configuration,
//     "Binding From Environment Variables";
//     https://github.com/spring-projects/spring-boot/wiki/Relaxed-Binding-2.0).
//     Both spellings are common and both bind.
//   - SPRING_KAFKA_STREAMS_APPLICATION_ID, SPRING_KAFKA_STREAMS_APPLICATIONID:
//     spring.kafka.streams.application-id; a Kafka Streams application's
//     application.id is its consumer group ID (Kafka's StreamsConfig:
//     "used as ... the group-id for membership management").
//   - KAFKA_GROUP_ID, KAFKA_CONSUMER_GROUP_ID, KAFKA_CONSUMER_GROUP,
//     GROUP_ID, CONSUMER_GROUP: the names services built on the Java
//     client, librdkafka (confluent-kafka-go/-python, rust-rdkafka, as in
//     seed 000's fan-out) and franz-go conventionally pass group.id under
//     (librdkafka CONFIGURATION.md and the Java client's ConsumerConfig
//     name the property group.id; the variable is the application's).
//
// Property keys (a ConfigMap key, or a line of an application.properties
// or application.yaml it holds), compared the way Spring Boot's relaxed
// binding does (case, '-', '_' and '.' aside):
//   - group.id: the Java client's ConsumerConfig.GROUP_ID_CONFIG and
//     librdkafka's group.id;
//   - application.id: Kafka Streams' StreamsConfig.APPLICATION_ID_CONFIG;
//   - spring.kafka.consumer.group-id, spring.kafka.streams.application-id:
//     Spring Boot's (Common Application Properties, Integration).
//
// Any other name containing GROUP whose value is the group ID is Possible
// evidence (Spring Cloud Stream's spring.cloud.stream.bindings.X.group,
// an application's own ORDERS_GROUP).
var (
	wellKnownEnv = map[string]bool{
		"SPRING_KAFKA_CONSUMER_GROUP_ID":      true,
		"SPRING_KAFKA_CONSUMER_GROUPID":       true,
		"SPRING_KAFKA_STREAMS_APPLICATION_ID": true,
		"SPRING_KAFKA_STREAMS_APPLICATIONID":  true,
		"KAFKA_GROUP_ID":                      true,
		"KAFKA_CONSUMER_GROUP_ID":             true,
		"KAFKA_CONSUMER_GROUP":                true,
		"GROUP_ID":                            true,
		"CONSUMER_GROUP":                      true,
	}
	wellKnownProperties = map[string]bool{
		relaxed("group.id"):                            true,
		relaxed("application.id"):                      true,
		relaxed("spring.kafka.consumer.group-id"):      true,
		relaxed("spring.kafka.streams.application-id"): true,
	}
)

// relaxed spells a property name the way Spring Boot's relaxed binding
// compares them: lower case, without '-', '_' and '.'.
func relaxed(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r != '-' && r != '_' && r != '.' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// envConfidence is how much a variable named name set to the group ID
// says: Likely for a well-known name (an envFrom key spelled as a
// property, group.id, counts as one), Possible for any name with GROUP in
// it, nothing otherwise.
func envConfidence(name string) Confidence {
	if wellKnownEnv[name] || (strings.Contains(name, ".") && wellKnownProperties[relaxed(name)]) {
		return Likely
	}
	if strings.Contains(strings.ToUpper(name), "GROUP") {
		return Possible
	}
	return 0
}

// propertyConfidence is envConfidence for a property key.
func propertyConfidence(key string) Confidence {
	if wellKnownProperties[relaxed(key)] || wellKnownEnv[key] {
		return Likely
	}
	if strings.Contains(strings.ToUpper(key), "GROUP") {
		return Possible
	}
	return 0
}
