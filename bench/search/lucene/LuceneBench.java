// The Lucene side of bench/search (bench/search/lucene.ts builds and drives it). Two commands:
//   index <corpus.jsonl> <indexDir>   build a one-segment index of the FlashRAG corpus, print one JSON line
//   serve <indexDir>                  answer benchmark commands read from stdin, one JSON line each
// The analyzer mirrors src/env/tokenize.ts as closely as Lucene's own parts allow: maximal runs of letters
// and digits, lower-cased, diacritics folded, Lucene's 33 English stopwords removed, tokens over 64
// characters dropped, no stemming. Similarity: BM25Similarity(k1 = 0.9, b = 0.4), as in our engine.
// Postings keep docs and freqs only (no positions: neither engine needs them for bag-of-words BM25).
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.LowerCaseFilter;
import org.apache.lucene.analysis.StopFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.miscellaneous.ASCIIFoldingFilter;
import org.apache.lucene.analysis.miscellaneous.LengthFilter;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.util.CharTokenizer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.TieredMergePolicy;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.AttributeFactory;

public class LuceneBench {
  static final BM25Similarity SIM = new BM25Similarity(0.9f, 0.4f);

  static Analyzer analyzer() {
    return new Analyzer() {
      @Override
      protected TokenStreamComponents createComponents(String field) {
        Tokenizer src = new CharTokenizer(AttributeFactory.DEFAULT_ATTRIBUTE_FACTORY, 1024 * 1024) {
          @Override
          protected boolean isTokenChar(int c) {
            return Character.isLetterOrDigit(c);
          }
        };
        TokenStream ts = new LowerCaseFilter(src);
        ts = new ASCIIFoldingFilter(ts);
        ts = new StopFilter(ts, EnglishAnalyzer.ENGLISH_STOP_WORDS_SET);
        ts = new LengthFilter(ts, 1, 64);
        return new TokenStreamComponents(src, ts);
      }
    };
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 3 && args[0].equals("index")) index(Paths.get(args[1]), Paths.get(args[2]));
    else if (args.length == 2 && args[0].equals("serve")) serve(Paths.get(args[1]));
    else {
      System.err.println("usage: LuceneBench index <corpus.jsonl> <indexDir> | serve <indexDir>");
      System.exit(2);
    }
  }

  // ---------------------------------------------------------------- indexing

  static void index(Path corpus, Path dir) throws IOException {
    long t0 = System.nanoTime();
    FieldType contents = new FieldType();
    contents.setIndexOptions(IndexOptions.DOCS_AND_FREQS);
    contents.setTokenized(true);
    contents.setStored(false);
    contents.freeze();
    TieredMergePolicy mp = new TieredMergePolicy();
    mp.setNoCFSRatio(0.0); // separate files, so the inverted-index part can be measured
    IndexWriterConfig cfg = new IndexWriterConfig(analyzer())
        .setSimilarity(SIM)
        .setOpenMode(IndexWriterConfig.OpenMode.CREATE)
        .setRAMBufferSizeMB(512)
        .setUseCompoundFile(false)
        .setMergePolicy(mp);
    long docs = 0;
    try (FSDirectory d = FSDirectory.open(dir); IndexWriter w = new IndexWriter(d, cfg);
         BufferedReader in = Files.newBufferedReader(corpus, StandardCharsets.UTF_8)) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isBlank()) continue;
        Document doc = new Document();
        doc.add(new StoredField("id", jsonString(line, "id")));
        doc.add(new Field("contents", jsonString(line, "contents"), contents));
        w.addDocument(doc);
        docs++;
      }
      w.forceMerge(1);
      w.commit();
    }
    double buildS = (System.nanoTime() - t0) / 1e9;
    Map<String, Long> byExt = new TreeMap<>();
    long total = 0;
    try (Stream<Path> files = Files.list(dir)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        String name = p.getFileName().toString();
        int dot = name.lastIndexOf('.');
        String ext = dot < 0 ? name.replaceAll("_.*", "") : name.substring(dot + 1);
        long size = Files.size(p);
        byExt.merge(ext, size, Long::sum);
        total += size;
      }
    }
    // Inverted index = postings (.doc), terms dictionary (.tim/.tip/.tmd) and norms (.nvd/.nvm); stored ids excluded.
    long inverted = 0;
    for (String e : new String[] {"doc", "tim", "tip", "tmd", "nvd", "nvm", "pos", "pay"}) inverted += byExt.getOrDefault(e, 0L);
    StringBuilder exts = new StringBuilder();
    for (Map.Entry<String, Long> e : byExt.entrySet()) exts.append(exts.length() == 0 ? "" : ",").append('"').append(e.getKey()).append("\":").append(e.getValue());
    Runtime rt = Runtime.getRuntime();
    System.out.println("{\"docs\":" + docs + ",\"build_s\":" + buildS + ",\"bytes\":" + total + ",\"inverted_bytes\":" + inverted
        + ",\"heap_used_mb\":" + (rt.totalMemory() - rt.freeMemory()) / 1048576.0 + ",\"peak_rss_mb\":" + procStatusMb("VmHWM")
        + ",\"by_ext\":{" + exts + "}}");
  }

  /** A memory figure of this process from /proc/self/status (Linux), in MiB; -1 elsewhere. */
  static double procStatusMb(String key) {
    try {
      for (String l : Files.readAllLines(Paths.get("/proc/self/status"))) {
        if (l.startsWith(key + ":")) return Long.parseLong(l.replaceAll("[^0-9]", "")) / 1024.0;
      }
    } catch (IOException e) {
      // not Linux
    }
    return -1;
  }

  /** The string value of a top-level key in a one-line JSON object (the corpus is FlashRAG JSONL). */
  static String jsonString(String line, String key) {
    String pat = "\"" + key + "\"";
    int i = line.indexOf(pat);
    if (i < 0) throw new IllegalArgumentException("no " + key + " in: " + line.substring(0, Math.min(80, line.length())));
    i = line.indexOf(':', i + pat.length()) + 1;
    while (line.charAt(i) == ' ') i++;
    if (line.charAt(i) != '"') { // a number id
      int j = i;
      while (j < line.length() && ",} ".indexOf(line.charAt(j)) < 0) j++;
      return line.substring(i, j);
    }
    StringBuilder sb = new StringBuilder();
    for (i++; ; i++) {
      char c = line.charAt(i);
      if (c == '"') return sb.toString();
      if (c != '\\') {
        sb.append(c);
        continue;
      }
      char e = line.charAt(++i);
      switch (e) {
        case 'n': sb.append('\n'); break;
        case 't': sb.append('\t'); break;
        case 'r': sb.append('\r'); break;
        case 'b': sb.append('\b'); break;
        case 'f': sb.append('\f'); break;
        case 'u': sb.append((char) Integer.parseInt(line.substring(i + 1, i + 5), 16)); i += 4; break;
        default: sb.append(e);
      }
    }
  }

  // ---------------------------------------------------------------- searching

  static IndexSearcher searcher;
  static final Analyzer ANALYZER = analyzer();
  static final int BATCH = 64;

  /** Bag-of-words OR query over the analyzed text (a repeated term becomes a repeated SHOULD clause). */
  static Query parse(String text) throws IOException {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    try (TokenStream ts = ANALYZER.tokenStream("contents", text)) {
      CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
      ts.reset();
      while (ts.incrementToken()) b.add(new TermQuery(new Term("contents", term.toString())), BooleanClause.Occur.SHOULD);
      ts.end();
    }
    return b.build();
  }

  static TopDocs search(String text, int k) throws IOException {
    return searcher.search(parse(text), k);
  }

  static void serve(Path dir) throws Exception {
    IndexSearcher.setMaxClauseCount(1 << 20);
    DirectoryReader reader = DirectoryReader.open(FSDirectory.open(dir));
    searcher = new IndexSearcher(reader); // no executor: each search runs on the calling thread
    searcher.setSimilarity(SIM);
    Map<String, List<String>> sets = new HashMap<>();
    Map<Integer, ExecutorService> pools = new HashMap<>();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintWriter out = new PrintWriter(System.out, true);
    out.println("{\"ready\":true,\"docs\":" + reader.numDocs() + ",\"segments\":" + reader.leaves().size() + "}");
    String line;
    while ((line = in.readLine()) != null) {
      String[] a = line.trim().split(" ");
      switch (a[0]) {
        case "load": sets.put(a[1], Files.readAllLines(Paths.get(a[1]), StandardCharsets.UTF_8)); out.println("{\"n\":" + sets.get(a[1]).size() + "}"); break;
        case "single": out.println(single(sets.get(a[1]), Integer.parseInt(a[2]))); break;
        case "batch": {
          int threads = Integer.parseInt(a[3]);
          ExecutorService pool = threads > 1 ? pools.computeIfAbsent(threads, Executors::newFixedThreadPool) : null;
          out.println(batch(sets.get(a[1]), Integer.parseInt(a[2]), pool));
          break;
        }
        case "topk": out.println(topk(sets.get(a[1]), Integer.parseInt(a[2]), Paths.get(a[3]))); break;
        case "rss": out.println("{\"rss_mb\":" + procStatusMb("VmRSS") + ",\"peak_rss_mb\":" + procStatusMb("VmHWM") + "}"); break;
        case "quit": for (ExecutorService p : pools.values()) p.shutdown(); reader.close(); out.println("{\"bye\":true}"); return;
        default: out.println("{\"error\":\"unknown command " + a[0] + "\"}");
      }
    }
  }

  /** One query at a time; per-query latency. */
  static String single(List<String> qs, int k) throws IOException {
    long[] lat = new long[qs.size()];
    long sink = 0;
    long t0 = System.nanoTime();
    for (int i = 0; i < qs.size(); i++) {
      long s = System.nanoTime();
      sink += search(qs.get(i), k).scoreDocs.length;
      lat[i] = System.nanoTime() - s;
    }
    long total = System.nanoTime() - t0;
    Arrays.sort(lat);
    return "{\"qps\":" + qs.size() / (total / 1e9) + ",\"p50_ms\":" + lat[lat.length / 2] / 1e6 + ",\"p99_ms\":"
        + lat[Math.min(lat.length - 1, (int) (lat.length * 0.99))] / 1e6 + ",\"hits\":" + sink + "}";
  }

  /** Consecutive batches of 64 queries: on this thread, or spread over a pool (one query per task). */
  static String batch(List<String> qs, int k, ExecutorService pool) throws Exception {
    int batches = qs.size() / BATCH;
    long[] lat = new long[batches];
    long sink = 0;
    long t0 = System.nanoTime();
    for (int b = 0; b < batches; b++) {
      long s = System.nanoTime();
      List<String> part = qs.subList(b * BATCH, (b + 1) * BATCH);
      if (pool == null) {
        for (String q : part) sink += search(q, k).scoreDocs.length;
      } else {
        List<Callable<TopDocs>> tasks = new ArrayList<>();
        for (String q : part) tasks.add(() -> search(q, k));
        for (Future<TopDocs> f : pool.invokeAll(tasks)) sink += f.get().scoreDocs.length;
      }
      lat[b] = System.nanoTime() - s;
    }
    long total = System.nanoTime() - t0;
    Arrays.sort(lat);
    return "{\"qps\":" + batches * BATCH / (total / 1e9) + ",\"batch_p50_ms\":" + lat[batches / 2] / 1e6 + ",\"batch_p99_ms\":"
        + lat[Math.min(batches - 1, (int) (batches * 0.99))] / 1e6 + ",\"hits\":" + sink + "}";
  }

  /** Top-k passage ids (tab-separated, best first) per query, for the agreement check. */
  static String topk(List<String> qs, int k, Path outFile) throws IOException {
    StoredFields stored = searcher.storedFields();
    List<String> lines = new ArrayList<>();
    for (String q : qs) {
      StringBuilder sb = new StringBuilder();
      for (ScoreDoc sd : search(q, k).scoreDocs) sb.append(sb.length() == 0 ? "" : "\t").append(stored.document(sd.doc).get("id"));
      lines.add(sb.toString());
    }
    Files.write(outFile, lines, StandardCharsets.UTF_8);
    return "{\"n\":" + lines.size() + "}";
  }
}
