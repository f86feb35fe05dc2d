package org.jtorch.vision.datasets;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitOption;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.jtorch.Torch;
import org.jtorch.data.Sample;
import org.jtorch.vision.Images;
import org.jtorch.vision.transforms.Transform;

/**
 * Images arranged one folder per class ({@code root/dog/xxx.png}, {@code root/cat/yyy.jpg}), as
 * {@code torchvision.datasets.ImageFolder}: classes are the sub-folder names sorted, numbered from 0;
 * samples are the image files of each class (searched recursively, following links) in sorted order.
 * Files are recognised by extension ({@link #EXTENSIONS}, case-insensitive, those {@code javax.imageio}
 * reads) and decoded on each {@link #get} (thread-safe) as uint8 HWC RGB tensors, as torchvision's
 * default loader ({@code PIL.Image.open(f).convert("RGB")}).
 */
public final class ImageFolder extends VisionDataset {
    public static final List<String> EXTENSIONS = List.of(".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff");

    /** One image file and its class index. */
    public record Entry(Path path, int target) {}

    private final Path root;
    private final List<String> classes;
    private final Map<String, Integer> classToIdx;
    private final List<Entry> samples;

    public ImageFolder(Path root) {
        this(root, null, null);
    }

    public ImageFolder(Path root, Transform transform, Transform targetTransform) {
        super(transform, targetTransform);
        this.root = root;
        if (!Files.isDirectory(root)) {
            throw new UncheckedIOException("ImageFolder: root " + root.toAbsolutePath().normalize() + " is not a directory",
                    new NoSuchFileException(root.toString()));
        }
        try {
            List<String> names = new ArrayList<>();
            try (Stream<Path> s = Files.list(root)) {
                s.filter(Files::isDirectory).forEach(p -> names.add(p.getFileName().toString()));
            }
            Collections.sort(names);
            if (names.isEmpty()) {
                throw new UncheckedIOException("ImageFolder: couldn't find any class folder in " + root.toAbsolutePath().normalize(),
                        new NoSuchFileException(root.toString()));
            }
            classes = List.copyOf(names);
            Map<String, Integer> idx = new LinkedHashMap<>();
            for (int i = 0; i < names.size(); i++) idx.put(names.get(i), i);
            classToIdx = Collections.unmodifiableMap(idx);
            List<Entry> list = new ArrayList<>();
            List<String> empty = new ArrayList<>();
            for (int c = 0; c < names.size(); c++) {
                List<Path> files = new ArrayList<>();
                try (Stream<Path> s = Files.walk(root.resolve(names.get(c)), FileVisitOption.FOLLOW_LINKS)) {
                    s.filter(p -> Files.isRegularFile(p) && isImage(p)).forEach(files::add);
                }
                // as sorted(os.walk(...)) then sorted(fnames): by directory, then by file name
                files.sort(Comparator.comparing((Path p) -> p.getParent().toString()).thenComparing(p -> p.getFileName().toString()));
                if (files.isEmpty()) empty.add(names.get(c));
                for (Path p : files) list.add(new Entry(p, c));
            }
            if (!empty.isEmpty()) {
                throw new UncheckedIOException("ImageFolder: found no valid file for the classes " + String.join(", ", empty)
                        + " in " + root.toAbsolutePath().normalize() + ". Supported extensions are: " + String.join(", ", EXTENSIONS),
                        new NoSuchFileException(root.toString()));
            }
            samples = List.copyOf(list);
        } catch (IOException e) {
            throw new UncheckedIOException("ImageFolder: cannot list " + root + ": " + e.getMessage(), e);
        }
    }

    private static boolean isImage(Path p) {
        String name = p.getFileName().toString().toLowerCase(Locale.ROOT);
        for (String ext : EXTENSIONS) if (name.endsWith(ext)) return true;
        return false;
    }

    public Path root() {
        return root;
    }

    /** The class names, sorted. */
    public List<String> classes() {
        return classes;
    }

    public Map<String, Integer> classToIdx() {
        return classToIdx;
    }

    /** The image files with their class indices, in sample order. */
    public List<Entry> samples() {
        return samples;
    }

    @Override
    public int size() {
        return samples.size();
    }

    @Override
    public Sample get(int index) {
        checkIndex(index);
        Entry e = samples.get(index);
        try {
            return sample(Images.readRgb(e.path()), Torch.scalar((long) e.target()));
        } catch (IOException ex) {
            throw new UncheckedIOException("ImageFolder: cannot read " + e.path() + ": " + ex.getMessage(), ex);
        }
    }
}
