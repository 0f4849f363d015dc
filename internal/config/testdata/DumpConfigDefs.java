// Prints the topic (LogConfig) and broker (AbstractKafkaConfig) ConfigDefs of the Kafka jars on the
// class path, one key per line, for testdata/kafka-4.4.0-configdefs.tsv (Kafka 4.4.0):
//   java -cp "$HOME/.cache/sluice/kafka-4.4.0/lib/*" DumpConfigDefs.java | grep -v ^SYN
import java.util.*;
import java.lang.reflect.*;
import org.apache.kafka.common.config.ConfigDef;

public class DumpConfigDefs {
  static void dump(String label, ConfigDef def) {
    for (ConfigDef.ConfigKey k : new TreeMap<>(def.configKeys()).values()) {
      Object d = k.defaultValue;
      String ds = d == ConfigDef.NO_DEFAULT_VALUE ? "<NODEFAULT>" : (d == null ? "<null>" : (d instanceof List ? String.join(",", ((List<?>)d).stream().map(Object::toString).toList()) : (d instanceof Class ? ((Class<?>)d).getName() : d.toString())));
      System.out.println(label + "\t" + k.name + "\t" + k.type + "\t" + ds + "\t" + (k.validator == null ? "" : k.validator.toString().replace("\n"," ")) + "\t" + k.importance + "\t" + k.internalConfig);
    }
  }
  public static void main(String[] a) throws Exception {
    Class<?> lc = Class.forName("org.apache.kafka.storage.internals.log.LogConfig");
    ConfigDef topic = null;
    try { topic = (ConfigDef) lc.getMethod("configDefCopy").invoke(null);} catch (Exception e) {}
    if (topic == null) { Field f = lc.getDeclaredField("CONFIG"); f.setAccessible(true); topic = (ConfigDef) f.get(null);}  
    dump("TOPIC", topic);
    Class<?> kc = Class.forName("org.apache.kafka.server.config.AbstractKafkaConfig");
    Field f = kc.getDeclaredField("CONFIG_DEF"); f.setAccessible(true);
    dump("BROKER", (ConfigDef) f.get(null));
    Class<?> syn = Class.forName("org.apache.kafka.server.config.ServerTopicConfigSynonyms");
    for (Field g : syn.getDeclaredFields()) {
      g.setAccessible(true);
      if (Modifier.isStatic(g.getModifiers())) System.out.println("SYN\t" + g.getName() + "\t" + g.get(null));
    }
  }
}
