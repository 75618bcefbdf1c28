package jquant.cli;

import jquant.calibration.allocation.BitAllocation;
import jquant.reports.Evaluation;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The library's named construction starts from what the commands do when given only what they require. */
class ApiDefaultsTest {

    private static Object parsed(String... args) {
        return Main.commandLine(args).parseArgs(args).subcommand().commandSpec().userObject();
    }

    @Test
    void allocationOptionsFromABudgetAreAllocatesDefaults() {
        AllocateCommand allocate = (AllocateCommand) parsed("allocate", "m.bin", "--budget", "4.5", "--out", "plan.json");
        assertThat(BitAllocation.Options.budget(4.5)).isEqualTo(allocate.options());
    }

    @Test
    void anEvaluationRequestOfAModelAndTextIsEvalsDefaults() {
        EvalCommand eval = (EvalCommand) parsed("eval", "m.jqw", "--data", "t.txt");
        assertThat(Evaluation.Request.of(Path.of("m.jqw"), Path.of("t.txt"))).isEqualTo(eval.request());
    }
}
